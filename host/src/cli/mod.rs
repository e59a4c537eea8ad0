//! The `pipewarden` command line.

pub mod eval;
mod examples;
pub mod inputs;
pub mod plan;
pub mod policy_push;
pub mod policy_test;
pub mod precompile;
pub mod reference;
pub mod table;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "pipewarden",
    version = version_text(),
    about = "A Kubernetes controller whose decisions are made by a sandboxed Wasm policy"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the controller.
    #[command(after_help = examples::RUN)]
    Run(Box<crate::config::RunArgs>),
    /// What `run` would do on the cluster now, read-only: a summary by namespace, a row per
    /// SWF and per recently completed workflow. Takes every flag and variable `run` takes.
    #[command(after_help = examples::PLAN)]
    Plan(Box<crate::config::PlanArgs>),
    /// Evaluate a policy offline on SWFs and workflow event sequences.
    #[command(after_help = examples::EVAL)]
    Eval(crate::config::EvalArgs),
    /// Compile a policy into the cache directory.
    #[command(after_help = examples::PRECOMPILE)]
    Precompile(crate::config::PrecompileArgs),
    /// Run case files against a policy: 0 all pass, 1 any fails, 2 a malformed case file.
    #[command(after_help = examples::TEST)]
    Test(crate::config::TestArgs),
    /// Print a shell completion script.
    #[command(after_help = examples::COMPLETIONS)]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Policies as OCI artifacts.
    #[command(subcommand)]
    Policy(PolicyCommand),
}

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Push a .wasm policy to a registry as a CNCF Wasm artifact; prints the reference
    /// pinned to its digest, the form `--policy` takes.
    #[command(after_help = examples::POLICY_PUSH)]
    Push(crate::config::PushArgs),
}

/// The git commit this binary was built from (`unknown` when built without git metadata).
pub const GIT_COMMIT: &str = env!("PIPEWARDEN_GIT_COMMIT");

/// What `pipewarden --version` prints after the name: the crate version, the commit and the
/// policy world (WIT package and version) this host serves.
pub fn version_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{} (commit {GIT_COMMIT}, policy world {})",
            env!("CARGO_PKG_VERSION"),
            crate::engine::WORLD
        )
    })
}

/// The status a process killed by SIGPIPE reports to the shell (128 + 13), as `cat` or `seq`
/// do when `head` stops reading: `pipewarden eval ... | head` ends with it, quietly.
pub const BROKEN_PIPE_STATUS: i32 = 141;

/// Whether `error` comes from writing to a closed stdout (the reader went away).
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs the command; the returned code is the process exit status.
pub fn main(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(args) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(crate::controller::run(*args)).map(|()| 0)
        }
        Command::Plan(args) => plan::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Precompile(args) => precompile::run(&args).map(|()| 0),
        Command::Test(args) => policy_test::run(&args),
        Command::Policy(PolicyCommand::Push(args)) => policy_push::run(&args).map(|()| 0),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "pipewarden", &mut std::io::stdout());
            Ok(0)
        }
    }
}
