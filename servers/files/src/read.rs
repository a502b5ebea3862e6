//! `read_file`: line-numbered text with an offset and a limit in lines.

use std::fs::{File, Metadata};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use mcp_tools::Workspace;
use rustix::fs::OFlags;

/// Files larger than this are only read in parts (offset/limit).
pub(crate) const HARD_CAP_BYTES: u64 = 4 * 1024 * 1024;
/// Lines returned when the caller gives no limit.
pub(crate) const DEFAULT_LIMIT: usize = 2000;
/// Characters kept of one line; longer lines are cut with a note.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes sniffed for a NUL to call a file binary.
const SNIFF_BYTES: usize = 8192;

/// What the caller asked for, already validated.
pub(crate) struct ReadRequest {
    /// 1-based first line.
    pub offset: usize,
    /// Most lines to return.
    pub limit: usize,
    /// Whether the caller chose the window (allows reading past the hard cap).
    pub windowed: bool,
    /// Cap on the text returned, in bytes.
    pub max_output: usize,
}

/// Most bytes one `read_file` call reads from a file, however it is windowed:
/// a file of several GB (or one endless line) never fills memory or time.
pub(crate) const MAX_SCAN_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes kept of one line: enough for `MAX_LINE_CHARS` characters of any
/// UTF-8; the rest of a longer line is counted, not stored.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// Opens the resolved `path` for reading beneath the workspace root's
/// descriptor, following no symlink (the resolver already followed them;
/// one met now was swapped in since).
///
/// `O_NONBLOCK` makes opening a FIFO with no writer return at once instead
/// of hanging the server; `O_NOCTTY` keeps a terminal from becoming ours.
pub(crate) fn open_for_read(ws: &Workspace, path: &Path) -> std::io::Result<File> {
    ws.open_file(path, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)
}

/// Takes the outcome of opening `path` and keeps it if it is a regular
/// file; anything else (a directory, a FIFO, a socket, a device) is refused
/// with a message.
///
/// The type is checked on the opened handle (`fstat`), not on the path
/// before opening, so a swap between check and open cannot slip a FIFO in.
pub(crate) fn open_regular(
    opened: std::io::Result<File>,
    path: &Path,
    shown: &str,
) -> Result<(File, Metadata), String> {
    let file = opened.map_err(|e| {
        // A socket cannot be opened at all (ENXIO): name what it is.
        match std::fs::symlink_metadata(path) {
            Ok(meta) if e.raw_os_error() == Some(libc::ENXIO) => {
                not_regular(shown, meta.file_type())
            }
            _ => io_message(shown, &e),
        }
    })?;
    let meta = file.metadata().map_err(|e| io_message(shown, &e))?;
    if meta.is_file() {
        Ok((file, meta))
    } else {
        Err(not_regular(shown, meta.file_type()))
    }
}

fn not_regular(shown: &str, kind: std::fs::FileType) -> String {
    let what = if kind.is_dir() {
        return format!("{shown} is a directory; use list_dir to see its entries");
    } else if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    format!(
        "{shown} is {what}, not a regular file; the file tools read and edit regular files only"
    )
}

/// Reads a whole file as UTF-8 text, for the tools that rewrite it.
pub(crate) fn read_text(
    opened: std::io::Result<File>,
    path: &Path,
    shown: &str,
) -> Result<String, String> {
    let (file, meta) = open_regular(opened, path, shown)?;
    if meta.len() > HARD_CAP_BYTES {
        return Err(format!(
            "{shown} is {} bytes, over the 4 MB cap for editing",
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // Bounded even if the file grows while it is read.
    file.take(HARD_CAP_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_message(shown, &e))?;
    if bytes.len() as u64 > HARD_CAP_BYTES {
        return Err(format!("{shown} is over the 4 MB cap for editing"));
    }
    String::from_utf8(bytes)
        .map_err(|_| format!("{shown} is not UTF-8 text; it cannot be edited as text"))
}

/// Reads the requested window of the opened `path`; `shown` is the path
/// as the model gave it, for messages.
pub(crate) fn read_window(
    opened: std::io::Result<File>,
    path: &Path,
    shown: &str,
    req: &ReadRequest,
) -> Result<String, String> {
    let (mut file, meta) = open_regular(opened, path, shown)?;
    if meta.len() > HARD_CAP_BYTES && !req.windowed {
        return Err(format!(
            "{shown} is {} bytes, over the 4 MB read cap; read it in parts with offset and limit (lines)",
            meta.len()
        ));
    }
    let mut sniff = vec![0u8; SNIFF_BYTES];
    let n = read_up_to(&mut file, &mut sniff).map_err(|e| io_message(shown, &e))?;
    sniff.truncate(n);
    if sniff.contains(&0) {
        return Err(format!(
            "{shown} is a binary file ({} bytes); read_file shows text only",
            meta.len()
        ));
    }
    if n == 0 {
        return Ok(format!("({shown} is empty)"));
    }
    let reader = BufReader::new(std::io::Cursor::new(sniff).chain(file.take(MAX_SCAN_BYTES)));
    render_lines(reader, shown, req)
}

/// How reading one line ended.
enum LineEnd {
    /// The file ended before any byte of a new line.
    Eof,
    /// A whole line (up to `\n` or the end of the file) of this many bytes.
    Whole(u64),
    /// The scan budget ran out this many bytes into the line.
    Budget(u64),
}

/// Reads one line, keeping at most `MAX_LINE_BYTES` of it in `buf` (when
/// `keep`) and at most `budget` bytes in all.
fn read_line_bounded(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: bool,
    budget: &mut u64,
) -> std::io::Result<LineEnd> {
    buf.clear();
    let mut total = 0u64;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(if total == 0 {
                LineEnd::Eof
            } else {
                LineEnd::Whole(total)
            });
        }
        if *budget == 0 {
            return Ok(LineEnd::Budget(total));
        }
        let available = &available[..available.len().min(*budget as usize)];
        let (take, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if keep {
            let room = MAX_LINE_BYTES.saturating_sub(buf.len());
            buf.extend_from_slice(&available[..take.min(room)]);
        }
        reader.consume(take);
        total += take as u64;
        *budget -= take as u64;
        if ends {
            return Ok(LineEnd::Whole(total));
        }
    }
}

fn render_lines(
    mut reader: impl BufRead,
    shown: &str,
    req: &ReadRequest,
) -> Result<String, String> {
    let mut out = String::new();
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    let last_wanted = req.offset.saturating_add(req.limit).saturating_sub(1);
    let mut stopped_for_size = None;
    let mut budget = MAX_SCAN_BYTES;
    let scan_note = format!(
        "[stopped: read_file reads only the first {} MB of a file; use grep to find text further on]\n",
        MAX_SCAN_BYTES / (1024 * 1024)
    );
    loop {
        let wanted = line_no + 1 >= req.offset;
        let end = read_line_bounded(&mut reader, &mut buf, wanted, &mut budget)
            .map_err(|e| io_message(shown, &e))?;
        let (len, complete) = match end {
            LineEnd::Eof => break,
            LineEnd::Whole(len) => (len, true),
            LineEnd::Budget(len) => (len, false),
        };
        if len == 0 {
            // The budget ran out exactly where a line starts.
            if line_no < req.offset {
                return Err(scan_error(shown, req.offset, line_no));
            }
            out.push_str(&scan_note);
            return Ok(out);
        }
        line_no += 1;
        if line_no < req.offset {
            if !complete {
                return Err(scan_error(shown, req.offset, line_no));
            }
            continue;
        }
        if line_no > last_wanted {
            // There is more: say where to go on.
            out.push_str(&format!(
                "[showing lines {}-{}; more follow, continue with offset={}]\n",
                req.offset, last_wanted, line_no
            ));
            return Ok(out);
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        let content_len = if complete && buf.ends_with(b"\n") {
            len - 1
        } else {
            len
        };
        let line = format_line(line_no, text, content_len, complete);
        if out.len() + line.len() > req.max_output && line_no > req.offset {
            stopped_for_size = Some(line_no);
            break;
        }
        out.push_str(&line);
        if !complete {
            out.push_str(&scan_note);
            return Ok(out);
        }
    }
    if let Some(next) = stopped_for_size {
        out.push_str(&format!(
            "[output capped at {} bytes after line {}; continue with offset={next}]\n",
            req.max_output,
            next - 1
        ));
    } else if line_no < req.offset {
        return Err(format!(
            "offset {} is past the end of {shown}, which has {line_no} lines",
            req.offset
        ));
    }
    Ok(out)
}

fn scan_error(shown: &str, offset: usize, lines_seen: usize) -> String {
    format!(
        "line {offset} of {shown} lies beyond the first {} MB (which hold {lines_seen} lines), and read_file reads no further; use grep to find text there",
        MAX_SCAN_BYTES / (1024 * 1024)
    )
}

/// One numbered line; `len` is the line's full length in bytes (without
/// its newline) and `complete` whether all of it was read.
fn format_line(line_no: usize, text: &str, len: u64, complete: bool) -> String {
    let cut = match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => cut,
        None if (text.len() as u64) < len || !complete => text.len(),
        None => return format!("{line_no:>6}\t{text}\n"),
    };
    let more = len.saturating_sub(cut as u64);
    let at_least = if complete { "" } else { "at least " };
    format!(
        "{line_no:>6}\t{}… [line cut: {at_least}{more} more bytes]\n",
        &text[..cut]
    )
}

fn read_up_to(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// A file-system error in words the model can act on.
pub(crate) fn io_message(shown: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("{shown} does not exist; check the path with list_dir")
        }
        std::io::ErrorKind::PermissionDenied => format!("permission denied: {shown}"),
        std::io::ErrorKind::IsADirectory => {
            format!("{shown} is a directory; use list_dir to see its entries")
        }
        std::io::ErrorKind::NotADirectory => {
            format!("{shown}: a component of the path is a file, not a directory")
        }
        _ if mcp_tools::beneath::is_swapped(e) => format!(
            "{shown}: a directory on the path was replaced by a symlink while the call ran (another process is changing the tree); nothing was read or written, try again"
        ),
        _ => format!("{shown}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ReadRequest {
        ReadRequest {
            offset: 1,
            limit: 10,
            windowed: true,
            max_output: 10_000,
        }
    }

    fn open(path: &str) -> std::io::Result<File> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
    }

    #[test]
    fn devices_are_refused_by_type() {
        // Devices outside a workspace are refused by the resolver first;
        // this checks the open itself, on devices every Linux has.
        for dev in ["/dev/zero", "/dev/null", "/dev/urandom"] {
            let err = read_window(open(dev), Path::new(dev), dev, &request()).unwrap_err();
            assert_eq!(
                err,
                format!(
                    "{dev} is a character device, not a regular file; the file tools read and edit regular files only"
                )
            );
            assert!(
                read_text(open(dev), Path::new(dev), dev)
                    .unwrap_err()
                    .contains("character device")
            );
        }
    }

    #[test]
    fn a_long_line_keeps_only_its_head_in_memory() {
        let line = "ab".repeat(MAX_LINE_BYTES) + "\nnext\n";
        let mut buf = Vec::new();
        let mut budget = MAX_SCAN_BYTES;
        let mut reader = BufReader::new(line.as_bytes());
        let end = read_line_bounded(&mut reader, &mut buf, true, &mut budget).unwrap();
        assert!(matches!(end, LineEnd::Whole(n) if n == 2 * MAX_LINE_BYTES as u64 + 1));
        assert_eq!(buf.len(), MAX_LINE_BYTES);
        let end = read_line_bounded(&mut reader, &mut buf, true, &mut budget).unwrap();
        assert!(matches!(end, LineEnd::Whole(5)));
        assert_eq!(buf, b"next\n");
    }
}
