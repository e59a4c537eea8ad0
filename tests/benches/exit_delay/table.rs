//! Percentiles and aligned tables.

use std::time::Duration;

/// p50, p99 and max of `delays` (nearest rank); None without any.
pub fn percentiles(delays: &[Duration]) -> Option<[Duration; 3]> {
    let mut sorted = delays.to_vec();
    sorted.sort();
    let at = |p: usize| sorted.get((sorted.len() * p).div_ceil(100).saturating_sub(1));
    Some([*at(50)?, *at(99)?, *at(100)?])
}

/// `n`, then p50, p99 and max in milliseconds (`-` without any).
pub fn delay_cells(delays: &[Duration]) -> Vec<String> {
    let mut cells = vec![delays.len().to_string()];
    match percentiles(delays) {
        Some(ps) => cells.extend(ps.iter().map(|d| ms(*d))),
        None => cells.extend(["-".to_owned(), "-".to_owned(), "-".to_owned()]),
    }
    cells
}

pub fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

/// Prints `headers` and `rows`, columns left-aligned to their widest cell.
pub fn print(headers: &[&str], rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .filter_map(|row| row.get(i).map(String::len))
                .chain([headers[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
