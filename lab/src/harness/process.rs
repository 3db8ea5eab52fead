//! The built `server` binary as a child process: started on a loopback port, waited for, killed.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;

/// A `server serve` child process on a loopback port. Killed (SIGKILL) when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: tokio::process::Child,
    pub base: String,
    pub pid: u32,
}

impl ServerProcess {
    /// Starts `binary serve` with `env` on top of this process's environment and waits until
    /// /readyz answers 200 (or the child exits, or 60 s pass). Its output goes to `log` (appended),
    /// or to this process's stderr without one.
    pub async fn start(
        binary: &Path,
        port: u16,
        env: &[(&str, String)],
        log: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let mut server = Self::spawn(binary, port, env, log)?;
        let shown = log.map_or_else(|| "its output".to_owned(), |l| l.display().to_string());
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = server.child.try_wait()? {
                anyhow::bail!("the server exited during start-up ({status}); see {shown}");
            }
            let ready = http
                .get(format!("{}/readyz", server.base))
                .timeout(Duration::from_secs(1))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return Ok(server);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the server was not ready within 60 s; see {shown}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts `binary serve` without waiting for it to be ready.
    pub fn spawn(
        binary: &Path,
        port: u16,
        env: &[(&str, String)],
        log: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let mut command = tokio::process::Command::new(binary);
        // Dev mode (failpoints, the dev webhook secret) with the login and email allowances lifted:
        // the harness plays many users from one address. Callers' `env` may override any of these.
        command
            .arg("serve")
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env("LEPTOS_ENV", "DEV")
            .env("LOGINS_PER_ADDRESS_MINUTE", "1000000")
            .env("LOGINS_PER_ACCOUNT_MINUTE", "1000000")
            .env("SIGNUPS_PER_ADDRESS_HOUR", "1000000")
            // One network (this machine) may spend a tenth of each hourly ceiling.
            .env("SIGNUPS_PER_HOUR", "10000000")
            .env("LOGINS_PER_HOUR", "100000000")
            .env("ACCOUNT_EMAILS_PER_HOUR", "10000000")
            .env("EMAILS_PER_ORG_HOUR", "1000000")
            .env("EMAILS_PER_RECIPIENT_HOUR", "1000000")
            .env("PUBLIC_PAGES_PER_ADDRESS_MINUTE", "1000000")
            .env("PUBLIC_PAGES_PER_TOKEN_MINUTE", "1000000")
            .env("PUBLIC_PAGES_PER_HOUR", "100000000")
            .env("PDFS_PER_ADDRESS_MINUTE", "1000000")
            .env("PDFS_PER_TOKEN_MINUTE", "1000000")
            .env("PDFS_PER_HOUR", "100000000")
            .env_remove("INVOICER_FAILPOINT")
            .kill_on_drop(true);
        match log {
            Some(log) => {
                let out = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .with_context(|| format!("cannot open {}", log.display()))?;
                command.stdout(out.try_clone()?).stderr(out);
            }
            None => {
                command.stdout(Stdio::null());
            }
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let pid = child.id().context("the server has no pid")?;
        Ok(ServerProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
            pid,
        })
    }

    /// Peak resident set size so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    }

    /// Waits up to `timeout` for the process to exit by itself; its exit code (None if killed by a
    /// signal), or Err if it is still running.
    pub async fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<Option<i32>> {
        let status = tokio::time::timeout(timeout, self.child.wait())
            .await
            .context("the server is still running")??;
        Ok(status.code())
    }

    /// SIGTERM: a graceful stop (requests in flight are answered, workers finish their rows), waited
    /// for up to 30 s.
    pub async fn terminate(mut self) -> anyhow::Result<()> {
        let status = tokio::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await?;
        anyhow::ensure!(status.success(), "kill -TERM {} failed", self.pid);
        self.wait_exit(Duration::from_secs(30)).await?;
        Ok(())
    }

    /// `kill -9`.
    pub async fn kill(mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}

/// A free loopback port (bound and let go: a process started right after can take it).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// CPU time a process has used (user + system), in milliseconds, from `/proc/<pid>/stat`; None
/// once it is gone. Linux reports it in ticks of 1/100 s (`USER_HZ`).
pub fn cpu_ms(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_cpu_ms(&stat)
}

fn stat_cpu_ms(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    Some((ticks(11)? + ticks(12)?) * 10)
}

/// CPU time used so far by each process named `name` on this machine (for `postgres`: the local
/// cluster's backends and background processes), in milliseconds by pid.
pub fn cpu_ms_named(name: &str) -> std::collections::HashMap<u32, u64> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Default::default();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
        })
        .filter_map(|pid| Some((pid, cpu_ms(pid)?)))
        .collect()
}

/// CPU time spent between two [`cpu_ms_named`] readings, in milliseconds: what each process present
/// at the second used since the first (all of it if it started in between). A process that ended in
/// between counts for nothing: the backends of a client that just left would otherwise take their
/// whole past with them and make the difference negative.
pub fn cpu_ms_between(
    before: &std::collections::HashMap<u32, u64>,
    after: &std::collections::HashMap<u32, u64>,
) -> u64 {
    after
        .iter()
        .map(|(pid, ms)| ms.saturating_sub(before.get(pid).copied().unwrap_or(0)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        let stat = "4242 (tokio rt) worker) S 1 4242 4242 0 -1 4194560 500 0 0 0 \
                    123 45 0 0 20 0 9 0 100 0 0";
        assert_eq!(stat_cpu_ms(stat), Some(1680));
        assert_eq!(stat_cpu_ms("garbage"), None);
    }

    #[test]
    fn processes_that_end_between_readings_take_nothing_away() {
        let before = [(1, 100), (2, 5_000), (3, 40)].into_iter().collect();
        // 2 (a finished client's backend) ended, 4 started.
        let after = [(1, 130), (3, 45), (4, 7)].into_iter().collect();
        assert_eq!(cpu_ms_between(&before, &after), 30 + 5 + 7);
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        assert!(cpu_ms(std::process::id()).is_some_and(|ms| ms > 0));
    }
}
