use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = server::cli::Args::parse();
    server::config::init_tracing();
    match server::cli::run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
