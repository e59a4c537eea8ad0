//! A settings document as the host reads it: the text the policy receives, and the budget the
//! host takes out of it first (`pipewarden.io/budget`).

use std::path::PathBuf;

use anyhow::Context;

use crate::engine::{BUDGET_KEY, BudgetSettings};

/// A settings file as read: what the policy receives, and the budget it sets for the host.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// JSON text, without the budget.
    pub text: String,
    pub budget: BudgetSettings,
}

/// Reads a settings file (JSON or YAML); none means `{}` and no budget.
pub fn read_settings(path: Option<&PathBuf>) -> anyhow::Result<Settings> {
    let Some(path) = path else {
        return Ok(Settings {
            text: "{}".into(),
            budget: BudgetSettings::default(),
        });
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read settings {}", path.display()))?;
    let value: serde_json::Value = serde_yaml::from_str(&text)
        .with_context(|| format!("settings {} are neither JSON nor YAML", path.display()))?;
    split_budget(value).with_context(|| format!("settings {}", path.display()))
}

/// Takes the host's budget out of a settings document.
pub fn split_budget(mut value: serde_json::Value) -> anyhow::Result<Settings> {
    let budget = match value.as_object_mut().and_then(|map| map.remove(BUDGET_KEY)) {
        Some(budget) => serde_json::from_value(budget).with_context(|| {
            format!(
                "{BUDGET_KEY} takes preset (compiled | interpreter), memoryMib, \
                 renderTimeoutMs, decisionTimeoutMs, poolSize and coreInstances"
            )
        })?,
        None => BudgetSettings::default(),
    };
    Ok(Settings {
        text: value.to_string(),
        budget,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::BudgetPreset;

    #[test]
    fn the_budget_leaves_the_settings_the_policy_sees() {
        let settings = split_budget(json!({
            "notify": "all",
            BUDGET_KEY: {"preset": "interpreter", "poolSize": 24},
        }))
        .unwrap();
        assert_eq!(settings.text, r#"{"notify":"all"}"#);
        assert_eq!(settings.budget.preset, Some(BudgetPreset::Interpreter));
        assert_eq!(settings.budget.pool_size, Some(24));
        let none = split_budget(json!({"notify": "all"})).unwrap();
        assert_eq!(none.budget, BudgetSettings::default());
    }

    #[test]
    fn a_misspelt_budget_key_is_refused() {
        let error = split_budget(json!({BUDGET_KEY: {"poolSiz": 4}})).unwrap_err();
        assert!(format!("{error:#}").contains("poolSiz"), "{error:#}");
    }
}
