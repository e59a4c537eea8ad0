//! Plain aligned tables for terminal output.

pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Self {
        Self::with_headers(headers.iter().map(|h| (*h).to_owned()).collect())
    }

    pub fn with_headers(headers: Vec<String>) -> Self {
        Table {
            headers,
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                if i < widths.len() {
                    widths[i] = widths[i].max(cell.chars().count());
                }
            }
        }
        let line = |cells: Vec<&str>| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            padded.join("  ").trim_end().to_string()
        };
        let mut out = line(self.headers.iter().map(String::as_str).collect());
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row.iter().map(String::as_str).collect()));
            out.push('\n');
        }
        out
    }
}
