//! What the command sandbox adds to a command, in one session: `run_command true` with the
//! sandbox on (the default) beside the same call with `command_sandbox: "off"`.
//!
//! The sandbox's one-time probe (a confined trial child) runs before the measurement, as
//! it does once per metron process; what is measured is the per-command cost: the
//! Landlock rules built for the policy (the grants along the way to each protected path),
//! the seccomp program, and the child entering its user and mount namespaces before exec.
//! Both sides stamp the project tree before and after, so the difference is the sandbox.
//!
//! ```sh
//! cargo bench --bench sandbox
//! ```

mod support;

use std::ffi::OsString;
use std::time::Duration;

use metron::authority::approval::ApproveAll;
use metron::config::SandboxMode;
use metron::project::Project;
use metron::testing::run_command;
use metron::tools::{Budgets, CommandLimits, Toolbox};

fn toolbox(root: &std::path::Path, mode: SandboxMode) -> Toolbox {
    let mut policy = CommandLimits {
        allowed_commands: vec!["true".to_owned()],
        ..CommandLimits::default()
    };
    policy.sandbox.mode = mode;
    let project = Project::discover(root).expect("open the project");
    Toolbox::new(project, Budgets::default())
        .with_limits(policy)
        .with_approver(Box::new(ApproveAll))
}

fn main() {
    let mut c = support::criterion(Duration::from_secs(5));
    let dir = tempfile::tempdir().expect("temp dir");
    support::git_init(dir.path());
    std::fs::write(dir.path().join("a.txt"), "x\n").expect("write");
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let confined = toolbox(dir.path(), SandboxMode::On);
    let unconfined = toolbox(dir.path(), SandboxMode::Off);
    for tb in [&confined, &unconfined] {
        let text = run_command(tb, "true", &env).expect("true runs");
        assert!(text.contains("exit status 0"), "{text}");
    }
    let mut group = c.benchmark_group("run_command/true");
    group.bench_function("sandbox on", |b| {
        b.iter(|| run_command(&confined, "true", &env));
    });
    group.bench_function("sandbox off", |b| {
        b.iter(|| run_command(&unconfined, "true", &env));
    });
    group.finish();
    c.final_summary();
}
