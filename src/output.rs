//! The Printer: results to stdout (text or one JSON document), everything else to stderr.
//! Colour only when the stream is a terminal and NO_COLOR is unset.

use crate::error::CliError;
use std::io::Write;

/// How results are printed (`-o`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// When stderr gets colour (`--color`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to paint, given whether stderr is a terminal and `NO_COLOR` is set.
    pub fn paint(self, terminal: bool, no_color: bool) -> bool {
        match self {
            Self::Auto => terminal && !no_color,
            Self::Always => true,
            Self::Never => false,
        }
    }
}

/// Where output goes and how it looks.
pub struct Printer {
    pub format: Format,
    /// `-q`: results and notes are not printed, warnings and errors are.
    quiet: bool,
    out: Box<dyn Write>,
    err: Box<dyn Write>,
    colour: bool,
    verbose: u8,
    /// Whether the one JSON document has been printed (a failure then adds no second one).
    json_printed: bool,
    /// Every warning said, which the JSON document carries too (`warnings`).
    warnings: Vec<String>,
}

impl Printer {
    pub fn new(
        format: Format,
        out: Box<dyn Write>,
        err: Box<dyn Write>,
        colour: bool,
        verbose: u8,
    ) -> Self {
        Self {
            format,
            quiet: false,
            out,
            err,
            colour,
            verbose,
            json_printed: false,
            warnings: Vec::new(),
        }
    }

    /// `-q`: only warnings, errors and the JSON document.
    pub fn with_quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// A text result (ignored in JSON mode, where the command prints a document instead).
    pub fn text(&mut self, s: &str) {
        if self.format == Format::Text && !self.quiet {
            let _ = writeln!(self.out, "{s}");
        }
    }

    /// The JSON result document, one typed value per command (ignored in text mode).
    pub fn json(&mut self, doc: &impl serde::Serialize) {
        if self.format == Format::Json {
            let v = serde_json::to_value(doc)
                .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }));
            self.document(v);
        }
    }

    /// Prints `v` with `schema` first and the warnings said, when it has none of its own.
    fn document(&mut self, v: serde_json::Value) {
        let mut v = with_schema(v);
        if let Some(map) = v.as_object_mut()
            && !self.warnings.is_empty()
            && !map.contains_key("warnings")
        {
            map.insert("warnings".into(), self.warnings.clone().into());
        }
        let text =
            serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
        let _ = writeln!(self.out, "{text}");
        self.json_printed = true;
    }

    /// A note on stderr about how the command ran (not a problem).
    pub fn note(&mut self, s: &str) {
        if self.quiet {
            return;
        }
        let label = self.paint("1;36", "note:");
        let _ = writeln!(self.err, "{label} {s}");
    }

    /// A warning on stderr.
    pub fn warn(&mut self, s: &str) {
        self.warnings.push(s.to_owned());
        let label = self.paint("1;33", "warning:");
        let _ = writeln!(self.err, "{label} {s}");
    }

    /// A question on stderr, without a line break, for the answer to follow.
    pub fn prompt(&mut self, s: &str) {
        let _ = write!(self.err, "{s}");
        let _ = self.err.flush();
    }

    /// A progress or detail line on stderr, shown with `-v`.
    pub fn detail(&mut self, s: &str) {
        if self.verbose > 0 {
            let _ = writeln!(self.err, "{s}");
        }
    }

    /// Renders a failed command: `error:`, the problems, `Caused by:`, `hint:`; with `-o json`
    /// also its document, unless the command printed one.
    pub fn error(&mut self, e: &CliError) {
        let mut text = format!("{} {}\n", self.paint("1;31", "error:"), e.error);
        for p in crate::config::problems_in(&e.error) {
            text.push_str(&format!(
                "  - {}\n",
                p.to_string().trim_end().replace('\n', "\n    ")
            ));
        }
        let doc = ErrorDocument::of(e);
        if !doc.error.causes.is_empty() {
            text.push_str("Caused by:\n");
            for c in &doc.error.causes {
                text.push_str(&format!("  {c}\n"));
            }
        }
        if let Some(h) = &e.hint {
            text.push_str(&format!("{} {h}\n", self.paint("1;36", "hint:")));
        }
        let _ = self.err.write_all(text.as_bytes());
        if self.format == Format::Json && !self.json_printed {
            self.json(&doc);
        }
    }

    /// A command's document, then `error` and `exit_code` of `e` (a dry run whose real run
    /// would be refused).
    pub fn json_refused(&mut self, doc: &impl serde::Serialize, e: &CliError) {
        #[derive(serde::Serialize)]
        struct Refused<'a, T> {
            #[serde(flatten)]
            doc: &'a T,
            #[serde(flatten)]
            refusal: ErrorDocument<'a>,
        }
        self.json(&Refused {
            doc,
            refusal: ErrorDocument::of(e),
        });
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
        let _ = self.err.flush();
    }
}

/// The version of the JSON documents' shape: raised when a field changes meaning or goes away
/// (added fields do not raise it). Every document carries it as `schema`.
pub const SCHEMA: u32 = 1;

/// The schema of a document holding `verify`'s reports: 2 since a check a stop cut is
/// `stopped`; 3 since one the deadline cut is `timed-out`, no longer missing.
pub const VERIFY_SCHEMA: u32 = 3;

/// The document of a failed command (`-o json`): what went wrong and the exit code.
#[derive(serde::Serialize)]
pub struct ErrorDocument<'a> {
    pub error: ErrorBody<'a>,
    pub exit_code: i32,
}

impl<'a> ErrorDocument<'a> {
    pub fn of(e: &'a CliError) -> Self {
        ErrorDocument {
            error: ErrorBody {
                kind: e.kind,
                message: e.error.to_string(),
                causes: e.error.chain().skip(1).map(ToString::to_string).collect(),
                problems: crate::config::problems_in(&e.error),
                hint: e.hint.as_deref(),
            },
            exit_code: e.exit as i32,
        }
    }
}

/// The error itself: its kind (docs/errors.md), message, causes, the configuration's
/// problems and the hint.
#[derive(serde::Serialize)]
pub struct ErrorBody<'a> {
    pub kind: crate::error::Kind,
    pub message: String,
    pub causes: Vec<String>,
    pub problems: &'a [crate::config::Problem],
    pub hint: Option<&'a str>,
}

/// `--version -o json`.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub struct VersionDocument {
    pub name: &'static str,
    pub version: &'static str,
    pub commit: &'static str,
    pub build_date: &'static str,
}

/// A document as printed outside a Printer (before the command line is parsed): `schema` first.
pub fn printed(doc: &impl serde::Serialize) -> String {
    let v = serde_json::to_value(doc).unwrap_or_default();
    serde_json::to_string_pretty(&with_schema(v)).unwrap_or_default()
}

/// A document with `schema` first (a document that has one already is left as it is).
fn with_schema(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) if !map.contains_key("schema") => {
            // Moved, not cloned: `lint policies` prints a document of megabytes.
            let mut out = serde_json::Map::with_capacity(map.len() + 1);
            out.insert("schema".into(), SCHEMA.into());
            out.extend(map);
            serde_json::Value::Object(out)
        }
        other => other,
    }
}

/// Download progress on stderr: a bar on a terminal, else a line every few seconds.
pub struct DownloadProgress {
    terminal: bool,
    quiet: bool,
    total: Option<u64>,
    /// Where this run's download began (a resumed one counts its speed from there), and when.
    from: u64,
    started: std::time::Instant,
    last: std::time::Instant,
    /// The width of the bar line last drawn, to clear it.
    drawn: usize,
}

/// How often the bar is redrawn at most, and a line is printed without a terminal.
const BAR_EVERY: std::time::Duration = std::time::Duration::from_millis(100);
const LINE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl DownloadProgress {
    /// `terminal`: stderr is a terminal; `quiet`: print nothing (JSON output to a script still
    /// gets the lines on stderr, so only tests turn this on).
    pub fn new(terminal: bool, quiet: bool) -> Self {
        let now = std::time::Instant::now();
        Self {
            terminal: terminal && !quiet,
            quiet,
            total: None,
            from: 0,
            started: now,
            last: now,
            drawn: 0,
        }
    }

    fn mb(n: u64) -> String {
        format!("{:.1} MB", n as f64 / 1_048_576.0)
    }

    fn draw(&mut self, done: u64) {
        use std::io::Write as _;
        let line = bar_line(
            done,
            self.total,
            done.saturating_sub(self.from),
            self.started.elapsed(),
        );
        let pad = self.drawn.saturating_sub(line.len());
        let mut err = std::io::stderr().lock();
        // A terminal that went away leaves nothing to draw on.
        let _ = write!(err, "\r{line}{}", " ".repeat(pad));
        let _ = err.flush();
        self.drawn = line.len();
    }
}

/// The bar's line: `downloading [=====>     ] 12.3 MB/45.8 MB 5.1 MB/s eta 6s`, without the
/// bar, the total and the time left when the size is unknown.
pub fn bar_line(
    done: u64,
    total: Option<u64>,
    this_run: u64,
    elapsed: std::time::Duration,
) -> String {
    const WIDTH: u64 = 30;
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        this_run as f64 / secs
    } else {
        0.0
    };
    let speed = format!("{}/s", DownloadProgress::mb(rate as u64));
    match total.filter(|t| *t > 0) {
        Some(t) => {
            let filled = (done.min(t) * WIDTH / t) as usize;
            let mut bar = "=".repeat(filled);
            if filled < WIDTH as usize {
                bar.push('>');
                bar.push_str(&" ".repeat(WIDTH as usize - filled - 1));
            }
            let eta = if rate > 0.0 {
                format!("{}s", (t.saturating_sub(done) as f64 / rate).ceil() as u64)
            } else {
                "?".into()
            };
            format!(
                "downloading [{bar}] {}/{} {speed} eta {eta}",
                DownloadProgress::mb(done),
                DownloadProgress::mb(t)
            )
        }
        None => format!("downloading {} {speed}", DownloadProgress::mb(done)),
    }
}

impl crate::release::Progress for DownloadProgress {
    fn begin(&mut self, what: &str, total: Option<u64>, done: u64) {
        self.total = total;
        self.from = done;
        self.started = std::time::Instant::now();
        self.last = self.started;
        if self.terminal {
            self.draw(done);
        } else if !self.quiet {
            let resumed = if done > 0 {
                format!(", resuming at {}", Self::mb(done))
            } else {
                String::new()
            };
            eprintln!("downloading {what}{resumed}");
        }
    }

    fn advance(&mut self, done: u64) {
        if self.terminal {
            if self.last.elapsed() >= BAR_EVERY {
                self.last = std::time::Instant::now();
                self.draw(done);
            }
        } else if !self.quiet && self.last.elapsed() >= LINE_EVERY {
            self.last = std::time::Instant::now();
            match self.total.filter(|t| *t > 0) {
                Some(t) => eprintln!(
                    "downloaded {} of {} ({}%)",
                    Self::mb(done),
                    Self::mb(t),
                    done * 100 / t
                ),
                None => eprintln!("downloaded {}", Self::mb(done)),
            }
        }
    }

    fn end(&mut self) {
        if self.terminal && self.drawn > 0 {
            eprint!("\r{}\r", " ".repeat(self.drawn));
            self.drawn = 0;
        }
    }
}

#[cfg(test)]
mod bar_tests {
    use super::bar_line;
    use std::time::Duration;

    #[test]
    fn the_bar_says_how_far_how_fast_and_how_long() {
        let mb = 1_048_576;
        let line = bar_line(15 * mb, Some(30 * mb), 15 * mb, Duration::from_secs(3));
        assert_eq!(
            line,
            "downloading [===============>              ] 15.0 MB/30.0 MB 5.0 MB/s eta 3s"
        );
        let full = bar_line(30 * mb, Some(30 * mb), 30 * mb, Duration::from_secs(6));
        assert!(full.contains(&format!("[{}]", "=".repeat(30))), "{full}");
        // A resumed download's speed counts only what this run fetched.
        let resumed = bar_line(20 * mb, Some(30 * mb), 2 * mb, Duration::from_secs(1));
        assert!(resumed.contains("2.0 MB/s eta 5s"), "{resumed}");
        assert_eq!(
            bar_line(mb, None, mb, Duration::ZERO),
            "downloading 1.0 MB 0.0 MB/s"
        );
    }
}
