//! Policy: whether a call the model proposed may run at all, before any tool sees it.
//!
//! Three rules, checked in this order: a turn the person cancelled runs nothing more; a
//! tool that was not offered in this session is refused (with the reason it was
//! withheld); the same call with identical arguments a third time in one turn is refused,
//! since its result will not change.

use std::collections::HashMap;

/// How many identical calls one turn may make before the next is refused.
pub(crate) const IDENTICAL_CALLS_ALLOWED: u32 = 2;

/// A tool the model may not call in this session, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdrawn {
    /// The tool's name.
    pub name: &'static str,
    /// Why it is withheld.
    pub reason: WithdrawalReason,
}

/// Why a tool is withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WithdrawalReason {
    /// The user listed it in `disabled_tools`.
    Disabled,
    /// It cannot work here (no git work tree, no `allowed_commands`); the text says why.
    Unavailable(String),
}

impl WithdrawalReason {
    /// Whether the user chose this (as opposed to the project lacking something).
    pub(crate) fn by_choice(&self) -> bool {
        matches!(self, WithdrawalReason::Disabled)
    }
}

impl std::fmt::Display for WithdrawalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WithdrawalReason::Disabled => f.write_str("listed in `disabled_tools`"),
            WithdrawalReason::Unavailable(reason) => f.write_str(reason),
        }
    }
}

/// The rule that decided a call, as the ledger and `--json` name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// The tool was offered, and no other rule objected.
    Offered,
    /// The person pressed Ctrl-C earlier in this turn.
    Interrupted,
    /// The tool is withheld in this session.
    NotOffered(WithdrawalReason),
    /// No tool has that name.
    NoSuchTool,
    /// This exact call was already made this many times before, in this turn.
    Identical(u32),
}

impl Rule {
    /// Whether the call may go on to its tool.
    pub(crate) fn allows(&self) -> bool {
        matches!(self, Rule::Offered)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::Offered => f.write_str("offered"),
            Rule::Interrupted => f.write_str("the user interrupted the turn"),
            Rule::NotOffered(why) => write!(f, "not offered in this session: {why}"),
            Rule::NoSuchTool => f.write_str("no such tool"),
            Rule::Identical(count) => write!(f, "identical call number {count} in one turn"),
        }
    }
}

/// A refusal by policy: the rule, and the text the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The rule that refused.
    pub(crate) rule: Rule,
    /// What the model is told.
    pub(crate) text: String,
}

/// The policy of one session: the offered tools, and the calls of the current turn.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallPolicy {
    offered: Vec<&'static str>,
    withdrawn: Vec<Withdrawn>,
    seen: HashMap<(String, String), u32>,
}

impl CallPolicy {
    /// A policy offering `offered` and withholding `withdrawn`.
    pub(crate) fn new(offered: Vec<&'static str>, withdrawn: Vec<Withdrawn>) -> CallPolicy {
        CallPolicy {
            offered,
            withdrawn,
            seen: HashMap::new(),
        }
    }

    /// Whether the model may call `name` in this session.
    pub(crate) fn is_offered(&self, name: &str) -> bool {
        self.offered.contains(&name)
    }

    /// The tools withheld, with the reason.
    pub(crate) fn withdrawn(&self) -> &[Withdrawn] {
        &self.withdrawn
    }

    /// A new turn: identical calls are counted afresh.
    pub(crate) fn start_turn(&mut self) {
        self.seen.clear();
    }

    /// Decides one call. `arguments` is the canonical form (after schema conversion, so
    /// `"10"` and `10` are one call); `cancelled` says the person stopped the turn.
    pub(crate) fn check(
        &mut self,
        name: &str,
        arguments: &str,
        cancelled: bool,
    ) -> Result<(), Refusal> {
        if cancelled {
            return Err(Refusal {
                rule: Rule::Interrupted,
                text: format!(
                    "Not run: the user pressed Ctrl-C in this turn before this {name} call, so nothing was done."
                ),
            });
        }
        if !self.is_offered(name) {
            let rule = match self.withdrawn.iter().find(|w| w.name == name) {
                Some(w) => Rule::NotOffered(w.reason.clone()),
                None => Rule::NoSuchTool,
            };
            return Err(Refusal {
                rule,
                text: self.not_offered(name),
            });
        }
        let count = self
            .seen
            .entry((name.to_owned(), arguments.to_owned()))
            .or_insert(0);
        *count += 1;
        if *count > IDENTICAL_CALLS_ALLOWED {
            return Err(Refusal {
                rule: Rule::Identical(*count),
                text: format!(
                    "Refused: you already called {name} with exactly these arguments {IDENTICAL_CALLS_ALLOWED} times in this turn, and the result will not change. Use what you have, or try different arguments."
                ),
            });
        }
        Ok(())
    }

    /// The refusal for a call to a tool that was not advertised.
    fn not_offered(&self, name: &str) -> String {
        let why = self.withdrawn.iter().find(|w| w.name == name).map_or_else(
            || format!("there is no tool named `{name}`"),
            |w| format!("`{name}` is not available in this session ({})", w.reason),
        );
        format!(
            "Refused: {why}. Do not call it again. The tools you can call are: {}.",
            self.offered.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_apply_in_order_and_identical_calls_are_counted_per_turn() {
        let mut policy = CallPolicy::new(
            vec!["view_slice"],
            vec![Withdrawn {
                name: "run_command",
                reason: WithdrawalReason::Disabled,
            }],
        );
        assert_eq!(policy.check("view_slice", "{}", false), Ok(()));
        assert_eq!(policy.check("view_slice", "{}", false), Ok(()));
        let third = policy.check("view_slice", "{}", false).err();
        assert_eq!(third.map(|r| r.rule), Some(Rule::Identical(3)));
        policy.start_turn();
        assert_eq!(policy.check("view_slice", "{}", false), Ok(()));
        let cancelled = policy.check("view_slice", "{}", true).err();
        assert_eq!(cancelled.map(|r| r.rule), Some(Rule::Interrupted));
        let withheld = policy.check("run_command", "{}", false).err();
        assert_eq!(
            withheld.map(|r| r.rule.to_string()),
            Some("not offered in this session: listed in `disabled_tools`".to_owned())
        );
        let unknown = policy.check("rm", "{}", false).err();
        assert_eq!(unknown.map(|r| r.rule), Some(Rule::NoSuchTool));
    }
}
