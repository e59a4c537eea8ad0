use clap::Parser;

fn main() {
    pipewarden::logging::init();
    let cli = pipewarden::cli::Cli::parse();
    match pipewarden::cli::main(cli) {
        Ok(code) => std::process::exit(code),
        // The reader of stdout went away (`| head`): nothing more to say, and no one to say it to.
        Err(error) if pipewarden::cli::is_broken_pipe(&error) => {
            std::process::exit(pipewarden::cli::BROKEN_PIPE_STATUS)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::exit(2);
        }
    }
}
