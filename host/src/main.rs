use clap::Parser;

fn main() {
    pipewarden::logging::init();
    let cli = pipewarden::cli::Cli::parse();
    match pipewarden::cli::main(cli) {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::exit(2);
        }
    }
}
