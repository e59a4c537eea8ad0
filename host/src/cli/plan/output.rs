//! The plan as each `-o` prints it, from the header, the summary and the spooled rows, writing
//! as it reads them: table, one JSON or YAML document, JSON Lines, and Markdown for a change
//! ticket.

use std::io::Write;

use super::rows::{Header, SwfRow, WorkflowRow, changes_summary};
use super::spool::Spooled;
use super::summary::{Summary, record};
use crate::cli::table::Table;
use crate::config::{PlanArgs, PlanOutput};

pub fn print(
    header: &Header,
    summary: &Summary,
    rows: &Spooled,
    args: &PlanArgs,
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.output {
        PlanOutput::Table => table(&mut out, header, summary, rows, args.diff_lines)?,
        PlanOutput::Json => json_document(&mut out, header, summary, rows)?,
        PlanOutput::Jsonl => json_lines(&mut out, header, summary, rows)?,
        PlanOutput::Yaml => yaml_document(&mut out, header, summary, rows)?,
        PlanOutput::Markdown => markdown(&mut out, header, summary, rows, args.diff_lines)?,
    }
    out.flush()?;
    Ok(())
}

fn header_value(header: &Header, summary: &Summary) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(header)?;
    value["summary"] = summary.to_value();
    Ok(value)
}

fn json_document(
    out: &mut impl Write,
    header: &Header,
    summary: &Summary,
    rows: &Spooled,
) -> anyhow::Result<()> {
    let head = serde_json::to_string_pretty(&header_value(header, summary)?)?;
    // The header object, left open for the two lists.
    let head = head.trim_end().trim_end_matches('}').trim_end();
    writeln!(out, "{head},\n  \"swfs\": [")?;
    let mut first = true;
    for row in rows.swfs()? {
        let comma = if std::mem::take(&mut first) { "" } else { "," };
        writeln!(out, "{comma}    {}", serde_json::to_string(&row?)?)?;
    }
    writeln!(out, "  ],\n  \"workflows\": [")?;
    first = true;
    for row in rows.workflows()? {
        let comma = if std::mem::take(&mut first) { "" } else { "," };
        writeln!(out, "{comma}    {}", serde_json::to_string(&row?)?)?;
    }
    writeln!(out, "  ]\n}}")?;
    Ok(())
}

fn json_lines(
    out: &mut impl Write,
    header: &Header,
    summary: &Summary,
    rows: &Spooled,
) -> anyhow::Result<()> {
    writeln!(out, "{}", record("plan", &header_value(header, summary)?)?)?;
    for row in rows.swfs()? {
        writeln!(out, "{}", record("swf", &row?)?)?;
    }
    for row in rows.workflows()? {
        writeln!(out, "{}", record("workflow", &row?)?)?;
    }
    Ok(())
}

fn yaml_document(
    out: &mut impl Write,
    header: &Header,
    summary: &Summary,
    rows: &Spooled,
) -> anyhow::Result<()> {
    write!(
        out,
        "{}",
        serde_yaml::to_string(&header_value(header, summary)?)?
    )?;
    let item = |text: String| -> String {
        let mut lines = text.lines();
        let mut item = format!("- {}\n", lines.next().unwrap_or_default());
        for line in lines {
            item.push_str(&format!("  {line}\n"));
        }
        item
    };
    writeln!(out, "swfs:{}", if rows.swf_rows == 0 { " []" } else { "" })?;
    for row in rows.swfs()? {
        write!(out, "{}", item(serde_yaml::to_string(&row?)?))?;
    }
    writeln!(
        out,
        "workflows:{}",
        if rows.workflow_rows == 0 { " []" } else { "" }
    )?;
    for row in rows.workflows()? {
        write!(out, "{}", item(serde_yaml::to_string(&row?)?))?;
    }
    Ok(())
}

/// `target 2.17.0, KFP single-user, ...`, the loop's line and the notes.
fn settings_lines(header: &Header) -> String {
    let mut text = format!(
        "target {}, KFP {}, SWF owner {}, rebuild policy {}, exit mode {}\nswf loop: {}\n",
        header.target_version.as_deref().unwrap_or("unknown"),
        header.mode,
        header.swf_owner,
        header.rebuild_policy,
        header.exit_mode,
        header.swf_loop,
    );
    for note in &header.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    text
}

/// The summary by namespace: a row per namespace and one for all, a column per state seen.
fn summary_table(summary: &Summary) -> Table {
    let states = summary.states_seen();
    let mut headers: Vec<String> = vec!["NAMESPACE".into(), "SWFS".into()];
    headers.extend(states.iter().map(|s| s.label().to_uppercase()));
    let mut table = Table::with_headers(headers);
    let mut row = |name: &str, tally: &crate::swf::fleet::Tally| {
        let mut cells = vec![name.to_owned(), tally.total().to_string()];
        cells.extend(states.iter().map(|s| tally.get(*s).to_string()));
        table.row(cells);
    };
    for (namespace, tally) in &summary.swfs {
        row(namespace, tally);
    }
    if summary.swfs.len() != 1 {
        row("all", &summary.all_swfs());
    }
    table
}

/// `N what: 2 would rebuild, 1 up to date` (and how many older ones were left out).
fn counts<'a>(what: &str, counts: impl Iterator<Item = (&'a str, u64)>, older: u64) -> String {
    let parts: Vec<(&str, u64)> = counts.filter(|(_, n)| *n > 0).collect();
    let total: u64 = parts.iter().map(|(_, n)| n).sum();
    let mut line = format!("{total} {what}");
    if !parts.is_empty() {
        let parts: Vec<String> = parts.iter().map(|(p, n)| format!("{n} {p}")).collect();
        line.push_str(&format!(": {}", parts.join(", ")));
    }
    if older > 0 {
        line.push_str(&format!(" ({older} finished earlier, not listed)"));
    }
    line.push('\n');
    line
}

fn pad(cells: &[&str], widths: &[usize]) -> String {
    let padded: Vec<String> = cells
        .iter()
        .enumerate()
        .map(|(i, cell)| match widths.get(i) {
            Some(width) => format!("{cell:<width$}"),
            None => (*cell).to_owned(),
        })
        .collect();
    padded.join("  ").trim_end().to_owned()
}

fn swf_cells(row: &SwfRow) -> [String; 4] {
    [
        row.swf.clone(),
        row.plan.clone(),
        changes_summary(&row.changes),
        row.reason.clone(),
    ]
}

fn workflow_cells(row: &WorkflowRow) -> [&str; 5] {
    [
        &row.workflow,
        &row.phase,
        &row.finished_at,
        &row.plan,
        &row.reason,
    ]
}

/// The first `limit` lines of a diff, and how many more there are.
fn diff_lines(diff: &[String], limit: usize) -> (Vec<&str>, usize) {
    let lines: Vec<&str> = diff.iter().flat_map(|change| change.lines()).collect();
    let more = lines.len().saturating_sub(limit);
    (lines.into_iter().take(limit).collect(), more)
}

fn listed_note(header: &Header) -> String {
    match header.only {
        Some(only) => format!(" (--only {only}: other rows counted above, not listed)"),
        None => String::new(),
    }
}

fn table(
    out: &mut impl Write,
    header: &Header,
    summary: &Summary,
    rows: &Spooled,
    limit: usize,
) -> anyhow::Result<()> {
    writeln!(out, "{}", settings_lines(header))?;
    write!(out, "{}", summary_table(summary).render())?;
    let all = summary.all_swfs();
    let plans = all.counts();
    write!(out, "{}", counts("SWFs", plans, 0))?;
    writeln!(out)?;
    let widths = &rows.widths.swf;
    let widths = [widths[0].max(3), widths[1].max(4), widths[2].max(7)];
    writeln!(
        out,
        "{}",
        pad(&["SWF", "PLAN", "CHANGES", "REASON"], &widths)
    )?;
    let mut with_diff = 0;
    for row in rows.swfs()? {
        let row = row?;
        let cells = swf_cells(&row);
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        writeln!(out, "{}", pad(&cells, &widths))?;
        with_diff += usize::from(!row.diff.is_empty());
    }
    writeln!(out, "{} SWF rows{}", rows.swf_rows, listed_note(header))?;
    if with_diff > 0 && limit > 0 {
        writeln!(out, "(the diff of each SWF that would be rebuilt follows)")?;
        for row in rows.swfs()? {
            let row = row?;
            if row.diff.is_empty() {
                continue;
            }
            let (lines, more) = diff_lines(&row.diff, limit);
            writeln!(out, "\n{}:", row.swf)?;
            for line in lines {
                writeln!(out, "  {line}")?;
            }
            if more > 0 {
                writeln!(out, "  ... {more} more lines (--diff-lines)")?;
            }
        }
    }
    writeln!(out)?;
    let widths = &rows.widths.workflow;
    let widths = [
        widths[0].max(8),
        widths[1].max(5),
        widths[2].max(8),
        widths[3].max(4),
    ];
    let head = ["WORKFLOW", "PHASE", "FINISHED", "PLAN", "REASON"];
    writeln!(out, "{}", pad(&head, &widths))?;
    for row in rows.workflows()? {
        let row = row?;
        writeln!(out, "{}", pad(&workflow_cells(&row), &widths))?;
    }
    let plans = summary.workflows.iter().map(|(p, n)| (p.as_str(), *n));
    let line = counts("completed workflows", plans, summary.older_workflows);
    write!(out, "{line}")?;
    if rows.workflow_rows as usize != summary.workflows.values().sum::<u64>() as usize {
        writeln!(
            out,
            "{} workflow rows{}",
            rows.workflow_rows,
            listed_note(header)
        )?;
    }
    let marks = summary.completions.iter().map(|(s, n)| (*s, *n));
    write!(
        out,
        "{}",
        counts("completed workflows in scope by mark", marks, 0)
    )?;
    Ok(())
}

/// A Markdown table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn markdown_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
    format!("| {} |\n", cells.join(" | "))
}

fn markdown(
    out: &mut impl Write,
    header: &Header,
    summary: &Summary,
    rows: &Spooled,
    limit: usize,
) -> anyhow::Result<()> {
    writeln!(out, "# pipewarden plan\n")?;
    let settings = [
        (
            "target",
            header.target_version.as_deref().unwrap_or("unknown"),
        ),
        ("KFP", header.mode),
        ("SWF owner", header.swf_owner),
        ("SWF loop", header.swf_loop.as_str()),
        ("rebuild policy", header.rebuild_policy),
        ("exit mode", header.exit_mode),
    ];
    write!(out, "{}", markdown_row(&["setting".into(), "value".into()]))?;
    writeln!(out, "| --- | --- |")?;
    for (name, value) in settings {
        write!(out, "{}", markdown_row(&[name.into(), value.into()]))?;
    }
    for note in &header.notes {
        writeln!(out, "\n> {}", cell(note))?;
    }
    writeln!(out, "\n## SWFs by namespace\n")?;
    let states = summary.states_seen();
    let mut head = vec!["namespace".to_owned(), "SWFs".to_owned()];
    head.extend(states.iter().map(|s| s.label().to_owned()));
    write!(out, "{}", markdown_row(&head))?;
    writeln!(out, "| --- |{}", " ---: |".repeat(head.len() - 1))?;
    let tallies = summary
        .swfs
        .iter()
        .map(|(ns, t)| (format!("`{ns}`"), *t))
        .chain(std::iter::once(("**all**".to_owned(), summary.all_swfs())));
    for (name, tally) in tallies {
        let mut cells = vec![name, tally.total().to_string()];
        cells.extend(states.iter().map(|s| tally.get(*s).to_string()));
        write!(out, "{}", markdown_row(&cells))?;
    }
    writeln!(
        out,
        "\n## SWFs ({} listed{})\n",
        rows.swf_rows,
        listed_note(header)
    )?;
    if rows.swf_rows > 0 {
        writeln!(
            out,
            "| SWF | plan | changes | reason |\n| --- | --- | --- | --- |"
        )?;
        for row in rows.swfs()? {
            let mut cells = swf_cells(&row?);
            cells[0] = format!("`{}`", cells[0]);
            write!(out, "{}", markdown_row(&cells))?;
        }
    }
    if limit > 0 {
        for row in rows.swfs()? {
            let row = row?;
            if row.diff.is_empty() {
                continue;
            }
            let (lines, more) = diff_lines(&row.diff, limit);
            writeln!(
                out,
                "\n### `{}`: {}\n",
                row.swf,
                changes_summary(&row.changes)
            )?;
            writeln!(out, "```diff")?;
            for line in lines {
                writeln!(out, "{line}")?;
            }
            writeln!(out, "```")?;
            if more > 0 {
                writeln!(out, "\n({more} more lines; `--diff-lines` shows more)")?;
            }
        }
    }
    writeln!(
        out,
        "\n## Completed workflows ({} listed{})\n",
        rows.workflow_rows,
        listed_note(header)
    )?;
    let plans = summary.workflows.iter().map(|(p, n)| (p.as_str(), *n));
    writeln!(
        out,
        "{}",
        counts("completed workflows", plans, summary.older_workflows).trim_end()
    )?;
    if rows.workflow_rows > 0 {
        writeln!(
            out,
            "\n| workflow | phase | finished | plan | reason |\n| --- | --- | --- | --- | --- |"
        )?;
        for row in rows.workflows()? {
            let row = row?;
            let cells: Vec<String> = workflow_cells(&row).map(str::to_owned).to_vec();
            write!(out, "{}", markdown_row(&cells))?;
        }
    }
    Ok(())
}
