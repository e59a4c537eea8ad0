//! The `pipewarden` command line.

pub mod eval;
pub mod inputs;
pub mod policy_args;
pub mod precompile;
pub mod table;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "pipewarden",
    version,
    about = "A Kubernetes controller whose decisions are made by a sandboxed Wasm policy"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the controller.
    Run(Box<crate::controller::RunArgs>),
    /// Evaluate a policy offline on SWFs and workflow event sequences.
    Eval(eval::EvalArgs),
    /// Compile a policy into the cache directory.
    Precompile(precompile::PrecompileArgs),
}

/// Runs the command; the returned code is the process exit status.
pub fn main(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(args) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(crate::controller::run(*args)).map(|()| 0)
        }
        Command::Eval(args) => Ok(if eval::run(&args)? { 0 } else { 1 }),
        Command::Precompile(args) => precompile::run(&args).map(|()| 0),
    }
}
