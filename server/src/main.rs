//! The `server` binary: parses the configuration, sets up logging, checks, then runs a command.

use clap::Parser;

// mimalloc, not the system allocator: a page render is thousands of small allocations from both
// runtime threads, and glibc's malloc spent a quarter of the server's CPU on them and kept arenas of
// freed memory (docs/performance.md, "Why the numbers are what they are").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // A `.env` in the working directory may set variables; the real environment wins.
    let _ = dotenvy::dotenv();
    let args = server::cli::Args::parse();
    server::logging::init(&args.config.logging, args.config.dev_mode());
    let deployed = !matches!(args.command, Some(server::cli::Command::Admin { .. }));
    let config = match args.config.check(deployed) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match server::cli::run(args.command, config).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
