//! The link between the permission rules and the OS sandbox: whether one Bash call runs inside
//! it, decided by [`crate::sandbox::runs_sandboxed`] from the context's [`BashSandbox`].

use super::context::BashSandbox;
use crate::sandbox::{runs_sandboxed, SandboxRules};

impl BashSandbox {
    /// Whether `command` runs inside the OS sandbox: the sandbox is active, the command is not
    /// in `excludedCommands`, and the call did not ask to run outside it
    /// (`dangerouslyDisableSandbox`, honoured only with `allowUnsandboxedCommands`).
    pub fn runs_sandboxed(&self, command: &str, disable_requested: bool) -> bool {
        runs_sandboxed(command, disable_requested, self.rules())
    }

    /// The rules [`runs_sandboxed`] reads.
    pub fn rules(&self) -> SandboxRules<'_> {
        SandboxRules {
            active: self.active,
            excluded_commands: &self.excluded_commands,
            allow_unsandboxed: self.allow_unsandboxed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_state_decides() {
        let mut sandbox = BashSandbox {
            active: true,
            excluded_commands: vec!["docker:*".into()],
            allow_unsandboxed: true,
            ..BashSandbox::default()
        };
        assert!(sandbox.runs_sandboxed("ls", false));
        assert!(!sandbox.runs_sandboxed("docker ps", false));
        assert!(!sandbox.runs_sandboxed("ls", true));
        sandbox.allow_unsandboxed = false;
        assert!(sandbox.runs_sandboxed("ls", true));
        sandbox.active = false;
        assert!(!sandbox.runs_sandboxed("ls", false));
    }
}
