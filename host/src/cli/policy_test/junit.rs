//! `pipewarden test -o junit`: JUnit XML as CI systems read it (Jenkins, GitLab, GitHub
//! actions that publish test results): one `testsuite` per case file, one `testcase` per
//! case, a `failure` with the detail for each that failed.

use super::Row;

pub fn render(rows: &[Row]) -> String {
    let failed = rows.iter().filter(|row| !row.outcome.pass).count();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"pipewarden test\" \
         tests=\"{}\" failures=\"{failed}\">\n",
        rows.len()
    );
    let mut files: Vec<&str> = Vec::new();
    for row in rows {
        if !files.contains(&row.file.as_str()) {
            files.push(&row.file);
        }
    }
    for file in files {
        let cases: Vec<&Row> = rows.iter().filter(|row| row.file == file).collect();
        let failed = cases.iter().filter(|row| !row.outcome.pass).count();
        xml.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\">\n",
            escape(file),
            cases.len()
        ));
        for row in cases {
            xml.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{}\"",
                escape(&row.name),
                escape(row.export)
            ));
            if row.outcome.pass {
                xml.push_str("/>\n");
                continue;
            }
            xml.push_str(&format!(
                ">\n      <failure message=\"expected {}, got {}\">{}</failure>\n    </testcase>\n",
                escape(&row.outcome.expected),
                escape(&row.outcome.got),
                escape(&row.outcome.detail)
            ));
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// Text as XML attribute or element content; characters XML 1.0 forbids are dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::policy_test::Outcome;

    fn row(file: &str, name: &str, pass: bool) -> Row {
        Row {
            file: file.into(),
            name: name.into(),
            export: "render-swf",
            outcome: Outcome {
                expected: "ok".into(),
                got: if pass { "ok" } else { "error <boom>" }.into(),
                pass,
                detail: "the \"render\" & more".into(),
            },
        }
    }

    #[test]
    fn a_suite_per_file_a_failure_per_failed_case_all_escaped() {
        let xml = render(&[
            row("a.yaml", "first", true),
            row("a.yaml", "second <x>", false),
            row("b.yaml", "third", true),
        ]);
        assert!(xml.contains("<testsuites name=\"pipewarden test\" tests=\"3\" failures=\"1\">"));
        assert!(xml.contains("<testsuite name=\"a.yaml\" tests=\"2\" failures=\"1\">"));
        assert!(xml.contains("<testcase name=\"second &lt;x&gt;\" classname=\"render-swf\">"));
        assert!(xml.contains(
            "<failure message=\"expected ok, got error &lt;boom&gt;\">the &quot;render&quot; \
             &amp; more</failure>"
        ));
        assert!(xml.contains("<testcase name=\"third\" classname=\"render-swf\"/>"));
        assert_eq!(escape("a\u{1}b"), "ab");
    }
}
