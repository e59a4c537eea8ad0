//! A settings document as the host reads it: the text the policy receives, and the budget the
//! host takes out of it first (`pipewarden.io/budget`).

use std::path::{Path, PathBuf};

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
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read settings {}", path.display()))?;
    parse_settings(&bytes, path)
}

/// The settings in `bytes`, read from `path` (named in errors): the one parser every caller
/// uses, so bytes checked against a pin are the bytes parsed. A key written as an environment
/// variable (capitals, digits, `_`) takes a string, as every environment value is, or null
/// (unset, as KFP's compiler tests run): any other value is refused, naming the key (a number
/// would otherwise read as unset, and the render fall back to a default image).
pub fn parse_settings(bytes: &[u8], path: &Path) -> anyhow::Result<Settings> {
    let text = std::str::from_utf8(bytes)
        .with_context(|| format!("settings {} are not UTF-8", path.display()))?;
    let value: serde_json::Value = serde_yaml::from_str(text)
        .with_context(|| format!("settings {} are neither JSON nor YAML", path.display()))?;
    refuse_non_string_variables(&value).with_context(|| format!("settings {}", path.display()))?;
    split_budget(value).with_context(|| format!("settings {}", path.display()))
}

/// Refuses a key written as an environment variable whose value is neither a string nor null.
fn refuse_non_string_variables(value: &serde_json::Value) -> anyhow::Result<()> {
    let Some(fields) = value.as_object() else {
        return Ok(());
    };
    let variable = |key: &str| {
        !key.is_empty()
            && key.starts_with(|c: char| c.is_ascii_uppercase())
            && key
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    };
    for (key, value) in fields {
        if variable(key) && !(value.is_string() || value.is_null()) {
            anyhow::bail!(
                "{key} is {value}, not a string: it names a KFP API server variable, and every \
                 environment value is a string (write \"{key}\": \"...\")"
            );
        }
    }
    Ok(())
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

    /// `{"V2_DRIVER_IMAGE": 42}` read as unset, and every rebuilt SWF got the compiler's
    /// fallback image: refused now, naming the key.
    #[test]
    fn a_variable_whose_value_is_not_a_string_is_refused_naming_it() {
        let path = Path::new("settings.json");
        let error = parse_settings(br#"{"V2_DRIVER_IMAGE": 42}"#, path).unwrap_err();
        let text = format!("{error:#}");
        assert!(
            text.contains("V2_DRIVER_IMAGE is 42, not a string"),
            "{text}"
        );
        let yaml = parse_settings(b"V2_LAUNCHER_IMAGE: true\n", path).unwrap_err();
        assert!(
            format!("{yaml:#}").contains("V2_LAUNCHER_IMAGE"),
            "{yaml:#}"
        );
        let fine = parse_settings(br#"{"V2_DRIVER_IMAGE": "d:2.17.1", "notify": "all"}"#, path);
        assert!(fine.is_ok(), "{fine:?}");
        let unset = parse_settings(br#"{"V2_DRIVER_IMAGE": null}"#, path);
        assert!(unset.is_ok(), "null says unset: {unset:?}");
    }

    #[test]
    fn a_misspelt_budget_key_is_refused() {
        let error = split_budget(json!({BUDGET_KEY: {"poolSiz": 4}})).unwrap_err();
        assert!(format!("{error:#}").contains("poolSiz"), "{error:#}");
    }
}
