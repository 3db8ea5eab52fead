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
    let mut args = server::cli::Args::parse();
    args.config.init_tracing();
    let deployed = !matches!(args.command, Some(server::cli::Command::Admin { .. }));
    if let Err(e) = args.config.validate(deployed) {
        eprintln!("error: {e:#}");
        return std::process::ExitCode::FAILURE;
    }
    match server::cli::run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
