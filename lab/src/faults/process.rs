//! Small process controls of a fault run: shell commands, readiness, random moments.

use std::time::{Duration, Instant};

use uuid::Uuid;

pub(crate) fn rand_ms(max: u64) -> u64 {
    u64::from(Uuid::new_v4().as_u128() as u32) % max
}

pub(crate) async fn shell(command: &str) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .status()
        .await?;
    anyhow::ensure!(status.success(), "`{command}` failed: {status}");
    Ok(())
}

pub(crate) async fn wait_ready(base: &str, within: Duration) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let ok = http
            .get(format!("{base}/readyz"))
            .timeout(Duration::from_secs(1))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ok {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("not ready within {within:?}")
}
