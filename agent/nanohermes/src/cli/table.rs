//! Left-aligned text tables for `tools` and `mcp list`.

/// Columns under `header`, two spaces apart, the last one not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    std::iter::once(&header)
        .chain(rows)
        .map(|row| {
            let last = row.len().saturating_sub(1);
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if c < last {
                    let pad = widths[c].saturating_sub(cell.chars().count()) + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.push('\n');
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_under_a_header() {
        let rows = vec![
            vec!["read_file".into(), "files".into(), "yes".into()],
            vec!["x__y".into(), "ext".into(), "no".into()],
        ];
        assert_eq!(
            table(&["TOOL", "SERVER", "READ-ONLY"], &rows),
            "TOOL       SERVER  READ-ONLY\nread_file  files   yes\nx__y       ext     no\n"
        );
    }
}
