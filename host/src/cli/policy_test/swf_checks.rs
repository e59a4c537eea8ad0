//! The checks a render-swf case makes on a render.

use serde_json::Value;

use super::format::{Case, SwfSpec};
use crate::engine::PolicyError;
use crate::swf::diff::semantic_diff;

pub struct Checks<'a> {
    pub case: &'a Case,
    pub input: &'a str,
    pub output: &'a str,
    pub read_swf: &'a dyn Fn(&SwfSpec) -> Result<String, String>,
    pub rerender: &'a dyn Fn(&str) -> Result<String, PolicyError>,
}

impl Checks<'_> {
    /// The checks that held, or the first that did not.
    pub fn run(&self) -> Result<Vec<String>, String> {
        let case = self.case;
        let out: Value =
            serde_json::from_str(self.output).map_err(|e| format!("render is not JSON: {e}"))?;
        let mut done = Vec::new();
        if let Some(expected) = &case.changes {
            let input: Value = serde_json::from_str(self.input)
                .map_err(|e| format!("the input is not JSON: {e}"))?;
            let got = self.kept_paths(&input, &out);
            let mut want: Vec<String> = expected.clone();
            want.sort();
            want.dedup();
            if got != want {
                return Err(format!(
                    "changes {}, expected {}",
                    listed(&got),
                    listed(&want)
                ));
            }
            done.push(format!("{} change(s)", got.len()));
        }
        if let Some(spec) = &case.output {
            let expected: Value = serde_json::from_str(&(self.read_swf)(spec)?)
                .map_err(|e| format!("output: not JSON: {e}"))?;
            let differing = self.kept_paths(&expected, &out);
            if !differing.is_empty() {
                return Err(format!(
                    "the render differs from the expected output at {}",
                    listed(&differing)
                ));
            }
            done.push("equals the expected output".into());
        }
        let view = with_parsed_workflow(&out);
        for (pointer, want) in &case.equal {
            match view.pointer(pointer) {
                Some(got) if got == want => {}
                Some(got) => return Err(format!("{pointer} is {got}, expected {want}")),
                None => return Err(format!("{pointer} is missing, expected {want}")),
            }
        }
        if !case.equal.is_empty() {
            done.push(format!("{} value(s)", case.equal.len()));
        }
        for pointer in &case.present {
            if view.pointer(pointer).is_none() {
                return Err(format!("{pointer} is missing"));
            }
        }
        if !case.present.is_empty() {
            done.push(format!("{} present", case.present.len()));
        }
        for (pointer, want) in &case.types {
            let got = out.pointer(pointer).map_or("missing", json_type);
            if got != want {
                return Err(format!("{pointer} is {got}, expected {want}"));
            }
        }
        if !case.types.is_empty() {
            done.push(format!("{} type(s)", case.types.len()));
        }
        if case.idempotent {
            let again = (self.rerender)(self.output)
                .map_err(|e| format!("rendering the render again: {e}"))?;
            if again != self.output {
                return Err("a render of the render changed the text".into());
            }
            done.push("idempotent".into());
        }
        if case.unchanged {
            let input: Value = serde_json::from_str(self.input)
                .map_err(|e| format!("the input is not JSON: {e}"))?;
            if input != out {
                return Err("the render changed the object".into());
            }
            done.push("unchanged".into());
        }
        Ok(done)
    }

    /// The paths `run` would write from `from` to `to`, sorted, without the ignored ones.
    fn kept_paths(&self, from: &Value, to: &Value) -> Vec<String> {
        let mut paths: Vec<String> = semantic_diff(from, to)
            .iter()
            .map(|change| change.path().to_string())
            .filter(|path| {
                !self
                    .case
                    .ignore
                    .iter()
                    .any(|prefix| path.starts_with(prefix))
            })
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
}

fn listed(paths: &[String]) -> String {
    if paths.is_empty() {
        "none".into()
    } else {
        format!("[{}]", paths.join(", "))
    }
}

/// The object with `spec.workflow.spec` parsed when it is a JSON string (as KFP stores it), so
/// JSON pointers reach into the embedded workflow.
fn with_parsed_workflow(swf: &Value) -> Value {
    let mut view = swf.clone();
    if let Some(slot) = view.pointer_mut("/spec/workflow/spec")
        && let Some(parsed) = slot
            .as_str()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
    {
        *slot = parsed;
    }
    view
}
