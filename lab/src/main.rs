//! `kca-webhook-lab`: the student tool.
//!
//! ```text
//! kca-webhook-lab [--lab LAB] [--workdir DIR] [--lang ja|en] [--kubeconfig PATH] [--cri-endpoint PATH]
//!     inspect | act N | grade N | grade all | report [--out FILE] | explain [TEXT] | digest PATH | schema NAME | check FILE
//!     | audit [-o table|json|yaml] [--context NAME]
//!     | grade N|all -o text|json|junit | grade-many DIR… [-o table|csv|json|html] [--reports DIR]
//!     | version [-o text|json|yaml] | completion bash|zsh|fish
//! ```
//!
//! Exit codes: 0 success; 1 findings or a failed act; 2 usage or input errors (nothing written);
//! `audit`: 0 no finding, 3 findings, 1 error.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use lab::error::LabError;
use lab::evidence::Lab;
use lab::grade::{self, GradeInput};
use lab::inputs::{self, Context, InputFile};
use lab::messages;
use lab::text::Lang;
use lab::workdir::{Workdir, read_json_input};

/// `--version`: the version, the commit it was built from (given by `cargo xtask dist`; `unknown`
/// in a development build), the Kubernetes and Kyverno versions the labs were made for (the
/// upstream wrapper modules' go.mod, `lab/build.rs`) and the target with its linking.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit: ",
    env!("KCA_COMMIT"),
    "\nbuild date: ",
    env!("KCA_BUILD_DATE"),
    "\nkubernetes: ",
    env!("KCA_KUBERNETES_VERSION"),
    "\nkyverno: ",
    env!("KCA_KYVERNO_VERSION"),
    "\ntarget: ",
    env!("KCA_TARGET"),
);

/// Observe what a policy engine's admission webhook does when its admission controller fails (the
/// about line `--help` shows names every lab of the registry: `lab::help::about`).
#[derive(Debug, Parser)]
#[command(name = "kca-webhook-lab", version, long_version = LONG_VERSION)]
struct Cli {
    /// Which lab (`--help` lists every lab of the registry: `lab::help::lab_help`).
    /// Default: the lab of the work directory's evidence, else `b`.
    #[arg(long, global = true, value_enum, env = "KCA_WEBHOOK_LAB")]
    lab: Option<Lab>,
    /// The work directory (inputs and evidence/).
    #[arg(long, global = true, env = "KCA_WEBHOOK_DIR", default_value = lab::workdir::DEFAULT_WORKDIR)]
    workdir: PathBuf,
    /// Language of messages.
    #[arg(long, global = true, value_enum, default_value = "ja")]
    lang: Lang,
    /// Kubeconfig of the lab cluster (default: k3s's, else the usual inference).
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    /// The node's CRI socket (default: k3s's containerd socket).
    #[arg(long, global = true)]
    cri_endpoint: Option<PathBuf>,
    /// The API server's audit log (JSON lines), read by acts 3, 5, 6, 7 to record the audit
    /// events of their own requests; only the embedded backend has one. Without it the evidence
    /// says audit was not configured.
    #[arg(long, global = true, env = lab::audit::ENV_VAR)]
    audit_log: Option<PathBuf>,
    /// Seconds act 2 (and act 6 of labs B and C) wait for Kyverno to register the policy's webhook
    /// before the act fails with diagnostics: raise it on a slow machine, lower it to fail sooner
    /// when Kyverno's admission controller is known to be down.
    #[arg(long, global = true, env = "KCA_REGISTRATION_BOUND", value_name = "SECONDS",
          default_value_t = lab::labs::common::REGISTRATION_BOUND.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    registration_bound: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the live values the inputs need (node UID, namespace UIDs, deployment UID) and each act's status.
    Inspect {
        /// Print the API server's admission webhook counters for the lab's webhooks instead
        /// (`/metrics`: rejections, fail-open, requests, latency count/sum).
        #[arg(long)]
        metrics: bool,
    },
    /// Run act N against the cluster (the lab's acts are listed in `lab::acts`).
    Act {
        /// Act number, 1 to the lab's last act.
        #[arg(value_parser = act_number)]
        n: u8,
    },
    /// Grade act N or `all` from the inputs and the saved evidence (no cluster access).
    Grade {
        /// An act number or `all`.
        which: String,
        /// Output format: text, JSON (schema: `lab/schemas/grade.schema.json`) or JUnit XML.
        #[arg(short = 'o', long, value_enum, default_value = "text")]
        output: lab::grade_out::Output,
    },
    /// Grade many work directories (a class's hand-ins) offline and print one table, a row per
    /// directory; a directory that cannot be read is a row of its own. Exit code 0 when every
    /// row passed, else 1.
    GradeMany {
        /// The work directories.
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// Output format: a table, CSV, JSON (an array of rows) or an HTML page.
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: lab::report::class::Format,
        /// Write each directory's one-page report into this directory (`<student>.html`) and link
        /// it from the table.
        #[arg(long)]
        reports: Option<PathBuf>,
    },
    /// Print the version, the commit and date it was built from, its target, and the Kubernetes
    /// and Kyverno versions the labs were made for.
    Version {
        /// Output format: text, JSON (schema: `lab/schemas/version.schema.json`) or YAML.
        #[arg(short = 'o', long, value_enum, default_value = "text")]
        output: lab::version::Output,
    },
    /// Print the shell completion script (bash: `source <(kca-webhook-lab completion bash)`).
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: lab::shell::Shell,
    },
    /// Internal: write the man pages into DIR (`cargo xtask dist`).
    #[command(hide = true)]
    ManPages {
        /// The directory.
        dir: PathBuf,
    },
    /// Print the canonical digest (SHA-256 of the RFC 8785 form) of a JSON file.
    Digest {
        /// The JSON file.
        path: PathBuf,
    },
    /// Print the JSON Schema of an input file (e.g. `policy.json`).
    Schema {
        /// Input file name, with or without `.json`.
        name: String,
    },
    /// Validate one input file offline (shape, fixed values, and what the saved evidence allows).
    Check {
        /// The input file; its name says which input it is. Read relative to the current
        /// directory; a bare name (`policy.json`, `policy`) not found there is read from the work
        /// directory.
        file: PathBuf,
    },
    /// Write the one-page lab record (self-contained HTML: acts, grades, fault timeline, raw
    /// evidence) from the work directory (no cluster access).
    Report {
        /// Where to write it (default: `<workdir>/report.html`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Explain an API answer: its outcome class, the rule that decided it, what it means for this
    /// lab (the graders' own classifier). Paste the error as an argument or on stdin, or give an
    /// evidence file and the JSON path of a request in it.
    Explain {
        /// The API error text (kubectl's output or a Status JSON); read from stdin when absent.
        text: Option<String>,
        /// An evidence file holding the request.
        #[arg(long, requires = "path")]
        evidence: Option<PathBuf>,
        /// JSON path of the request in the evidence file (`/facts/target_bad` or `facts.target_bad`).
        #[arg(long, requires = "evidence")]
        path: Option<String>,
    },
    /// Audit every admission webhook registration of any cluster, read-only: failurePolicy,
    /// timeoutSeconds, selectors, matchConditions, sideEffects, rules, ready endpoints now, what
    /// it intercepts (kube-system, Nodes, Leases, CSRs), the worst-case wait of a request, and
    /// the labs' traps. Exit codes: 0 no finding, 3 findings, 1 error.
    Audit {
        /// Output format: a table, or the JSON/YAML whose schema `--schema` prints.
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: lab::audit_cmd::Output,
        /// The kubeconfig context to use (default: its current-context).
        #[arg(long)]
        context: Option<String>,
        /// Print the JSON Schema of `-o json`/`-o yaml` and read no cluster.
        #[arg(long)]
        schema: bool,
    },
    /// Heal every unfinished fault attempt of the work directory (resume a process still stopped,
    /// restore replicas still at 0) and print what was done.
    Heal,
    /// Internal: the detached freeze healer.
    #[command(hide = true)]
    HealerFreeze {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Internal: the detached scale healer (restores the replicas).
    #[command(hide = true)]
    HealerScale {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    // `--help` speaks the language the messages will (`lab::help::localize_help`).
    let help = lab::help::localize_help(command(), help_lang(std::env::args_os().skip(1)));
    let cli = Cli::from_arg_matches(&help.get_matches()).unwrap_or_else(|e| e.exit());
    match &cli.command {
        Command::HealerFreeze { args } => return code(lab::faults::freeze::healer_main(args)),
        Command::HealerScale { args } => return code(lab::faults::scale::healer_main(args)),
        _ => {}
    }
    let lang = cli.lang;
    // The work directory is opened once, by the trusted walk (`Workdir::open`); every command
    // that reads or writes it goes through that fd. A refused one is refused for those commands
    // and never read (not even to tell the lab) by the others.
    let (workdir, refused) = match Workdir::new(&cli.workdir).open(false) {
        Ok(w) => (w, None),
        Err(e) => (Workdir::new(&cli.workdir), Some(e)),
    };
    let lab = cli.lab.unwrap_or_else(|| match refused {
        Some(_) => Lab::B,
        None => lab_of(&workdir),
    });
    let result = match refused {
        Some(e) if uses_workdir(&cli.command) => Err(e),
        _ => run(&cli, &workdir, lab),
    };
    match result {
        Ok(c) => code(c),
        Err(e) => {
            // A missing file is named by its full path.
            let e = match e {
                LabError::InputMissing { path } => LabError::InputMissing {
                    path: std::path::absolute(&path).unwrap_or(path),
                },
                e => e,
            };
            // `digest` never writes, so its errors do not say "nothing was written".
            let text = if matches!(cli.command, Command::Digest { .. }) {
                messages::read_only_error_text(lang, &e)
            } else {
                messages::error_text(lang, &e)
            };
            eprintln!("{}: {text}", messages::error_prefix(lang));
            if let Some(hint) = missing_input_hint(&cli, &workdir, lab, &e) {
                eprintln!("{hint}");
            }
            code(e.exit_code())
        }
    }
}

/// The name a kubectl plugin's file has (krew: `kubectl-<name>`, `_` for `-`).
const KUBECTL_PLUGIN_FILE: &str = "kubectl-kca_webhook_lab";

/// The CLI; run as the kubectl plugin (`kubectl kca-webhook-lab …`, the file
/// [`KUBECTL_PLUGIN_FILE`]) its usage lines say so, as krew asks.
fn command() -> clap::Command {
    let as_plugin = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .is_some_and(|n| n == KUBECTL_PLUGIN_FILE);
    let cmd = Cli::command();
    if as_plugin {
        cmd.bin_name("kubectl kca-webhook-lab")
    } else {
        cmd
    }
}

/// The language `--lang` asks for among the command-line arguments (`--lang en`, `--lang=en`),
/// read before clap parses them so that `--help` can follow it; Japanese unless `en` is given.
fn help_lang(args: impl Iterator<Item = std::ffi::OsString>) -> Lang {
    let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let en = args.iter().enumerate().any(|(i, a)| {
        a == "--lang=en" || (a == "--lang" && args.get(i + 1).is_some_and(|v| v == "en"))
    });
    if en { Lang::En } else { Lang::Ja }
}

/// `act N`'s parser: an act number of some lab ([`lab::acts::max_count`]); `run_act` refuses one
/// the chosen lab does not have.
fn act_number(s: &str) -> Result<u8, String> {
    let last = lab::acts::max_count();
    match s.parse::<u8>() {
        Ok(n) if (1..=last).contains(&n) => Ok(n),
        _ => Err(format!("{s} is not in 1..={last}")),
    }
}

fn code(c: i32) -> ExitCode {
    ExitCode::from(u8::try_from(c).unwrap_or(1))
}

/// Whether `command` reads or writes the work directory (then it must open trusted).
fn uses_workdir(command: &Command) -> bool {
    matches!(
        command,
        Command::Inspect { .. }
            | Command::Act { .. }
            | Command::Heal
            | Command::Grade { .. }
            | Command::Check { .. }
            | Command::Report { .. }
    )
}

/// Runs one command in `workdir` for `lab` (`--lab`, else [`lab_of`]); returns the exit code (0 ok,
/// 1 findings).
fn run(cli: &Cli, workdir: &Workdir, lab: Lab) -> Result<i32, LabError> {
    match &cli.command {
        Command::Inspect { .. } | Command::Act { .. } | Command::Heal => {
            cluster_command(cli, lab, workdir)
        }
        Command::Grade { which, output } => grade_command(cli.lang, workdir, lab, which, *output),
        Command::GradeMany {
            dirs,
            output,
            reports,
        } => lab::grade_many::main(dirs, cli.lab, *output, cli.lang, reports.as_deref()),
        Command::Version { output } => {
            out(&lab::version::render(&lab::version::current(), *output)?);
            Ok(0)
        }
        Command::Completion { shell } => {
            let script = lab::shell::completion(Cli::command(), "kca-webhook-lab", *shell);
            out(String::from_utf8_lossy(&script).trim_end());
            Ok(0)
        }
        Command::ManPages { dir } => {
            for page in lab::shell::man_pages(Cli::command(), dir)? {
                out(&page.display().to_string());
            }
            Ok(0)
        }
        Command::Digest { path } => {
            out(&lab::digest::digest_file(path)?);
            if std::io::stderr().is_terminal() {
                eprintln!("{}", messages::digest_note(cli.lang));
            }
            Ok(0)
        }
        Command::Schema { name } => {
            let file = InputFile::from_name(lab, name)
                .ok_or_else(|| unknown_input(cli.lang, lab, name))?;
            let text = serde_json::to_string_pretty(&inputs::schema(file))
                .map_err(|e| LabError::Usage(e.to_string()))?;
            out(&text);
            Ok(0)
        }
        Command::Check { file } => check_command(cli.lang, workdir, lab, file),
        Command::Report { out: path } => report_command(cli.lang, workdir, lab, path.as_deref()),
        Command::Explain {
            text,
            evidence,
            path,
        } => explain_command(
            cli.lang,
            lab,
            text.as_deref(),
            evidence.as_deref(),
            path.as_deref(),
        ),
        Command::Audit {
            output,
            context,
            schema,
        } => audit_command(cli, context.as_deref(), *output, *schema),
        Command::HealerFreeze { .. } | Command::HealerScale { .. } => Ok(2),
    }
}

/// `grade N` / `grade all`: prints each act's findings (or, with `-o json|junit`, the document
/// [`lab::grade_out::render`] makes); 1 when any act did not pass.
fn grade_command(
    lang: Lang,
    workdir: &Workdir,
    lab: Lab,
    which: &str,
    output: lab::grade_out::Output,
) -> Result<i32, LabError> {
    // A mistyped `--workdir` is said as such, not as eight missing evidence files.
    if !workdir.root().is_dir() {
        return Err(LabError::Io {
            path: workdir.root().to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such work directory (--workdir or KCA_WEBHOOK_DIR)",
            ),
        });
    }
    let input = GradeInput::load(workdir, lab);
    let results = match which {
        "all" => grade::grade_all(lab, &input),
        n => match n.parse::<u8>().ok().and_then(|a| lab::acts::spec(lab, a)) {
            Some(spec) => vec![grade::grade(lab, spec.number, &input)],
            None => {
                return Err(LabError::Usage(messages::grade_usage(
                    lang,
                    lab::acts::count(lab),
                    n,
                )));
            }
        },
    };
    if output == lab::grade_out::Output::Text {
        for f in &results {
            out(&messages::findings(lang, f));
        }
    } else {
        out(&lab::grade_out::render(
            lab,
            &input,
            &results,
            output,
            lang,
            workdir.root(),
        )?);
    }
    Ok(if results.iter().all(|f| f.passed()) {
        0
    } else {
        1
    })
}

/// `check FILE`: validates one input file ([`check_path`]) against its schema and what the work
/// dir's evidence already holds.
fn check_command(
    lang: Lang,
    workdir: &Workdir,
    lab: Lab,
    file: &std::path::Path,
) -> Result<i32, LabError> {
    let name = file.to_string_lossy();
    let kind = InputFile::from_name(lab, &name).ok_or_else(|| unknown_input(lang, lab, &name))?;
    let file = &check_path(file, workdir, kind);
    let value = read_json_input(file, kind.file_name())?;
    let (ctx, complete) = offline_context(workdir, lab, kind, file);
    inputs::validate(kind, &value, &ctx)?;
    if !(complete
        && matches!(
            kind,
            InputFile::ReportA | InputFile::ReportB | InputFile::ReportC
        ))
    {
        out(&messages::check_ok(lang, kind.file_name(), !complete));
        return Ok(0);
    }
    // A report is also held to act 8's own rule: its words against the evidence.
    let mut input = GradeInput::load(workdir, lab);
    input.inputs.insert(kind, Ok(value.clone()));
    let checked = grade::check_report(lab, &input);
    let issues: Vec<_> = checked
        .words
        .iter()
        .filter(|(field, expected)| value.get(field).and_then(|v| v.as_str()) != Some(expected))
        .map(|(field, expected)| lab::error::InputIssue {
            file: kind.file_name().to_owned(),
            json_path: format!("$.{field}"),
            expected: messages::check_report_expected(Lang::En, expected),
            found: value
                .get(field)
                .map_or(messages::check_report_nothing(Lang::En).into(), |v| {
                    v.to_string()
                }),
            mismatch: None,
            ja: Some((
                messages::check_report_expected(Lang::Ja, expected),
                value
                    .get(field)
                    .map_or(messages::check_report_nothing(Lang::Ja).into(), |v| {
                        v.to_string()
                    }),
            )),
        })
        .collect();
    if !issues.is_empty() {
        return Err(LabError::InputInvalid { issues });
    }
    out(&messages::check_report_ok(
        lang,
        kind.file_name(),
        checked.words.len(),
    ));
    Ok(0)
}

/// `report [--out FILE]`: grades every act and writes the one-page record (default
/// `<workdir>/report.html`), linking the newest diagnostics a failed act left.
fn report_command(
    lang: Lang,
    workdir: &Workdir,
    lab: Lab,
    path: Option<&std::path::Path>,
) -> Result<i32, LabError> {
    // A report of a work directory that does not exist is a wrong --workdir: refuse,
    // creating nothing.
    if !workdir.root().exists() {
        return Err(LabError::Usage(messages::workdir_missing(
            lang,
            workdir.root(),
        )));
    }
    // The report is written into the work directory by default: only one root trusts.
    workdir.check_trusted()?;
    let path = path
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| workdir.root().join("report.html"));
    let input = GradeInput::load(workdir, lab);
    let grades = grade::grade_all(lab, &input);
    // The newest diagnostics a failed act left (`<workdir>/diagnostics/act-NN/`).
    let diag = lab::diagnostics::latest_in_workdir(workdir.root()).map(|(d, s)| {
        let txt = d.join("summary.txt");
        let base = path.parent().unwrap_or(std::path::Path::new(""));
        let href = txt.strip_prefix(base).unwrap_or(&txt).display().to_string();
        (s, href)
    });
    let link = diag
        .as_ref()
        .map(|(summary, href)| lab::report::DiagnosticsLink { summary, href });
    let page = lab::report::render_with_diagnostics(lab, &input, &grades, lang, link);
    // Written by descriptor: the default through the open work directory's fd, `--out` into a
    // directory opened by the trusted walk (`lab::report::write_file`).
    lab::report::write_file(&workdir.io_path(&path), page.as_bytes()).map_err(|e| match e {
        LabError::Io { path: p, source } => LabError::Io {
            path: workdir.shown_path(&p),
            source,
        },
        e => e,
    })?;
    out(&path.display().to_string());
    Ok(0)
}

/// `explain [TEXT]` / `explain --evidence FILE --path P`: classifies a pasted API answer (from
/// the argument, an evidence file or stdin) and prints what it means.
fn explain_command(
    lang: Lang,
    lab: Lab,
    text: Option<&str>,
    evidence: Option<&std::path::Path>,
    path: Option<&str>,
) -> Result<i32, LabError> {
    let answer = match (evidence, path, text) {
        (Some(e), Some(p), _) => lab::explain::answer_at(e, p)?,
        (_, _, Some(t)) => lab::explain::parse_answer(t)?,
        _ => {
            // Bounded like any input file (`files::JSON_BOUND`): more is refused, not read.
            let bound = lab::files::JSON_BOUND;
            let mut t = String::new();
            std::io::Read::read_to_string(
                &mut std::io::Read::take(std::io::stdin().lock(), bound + 1),
                &mut t,
            )
            .map_err(LabError::io("<stdin>"))?;
            if t.len() as u64 > bound {
                return Err(LabError::io("<stdin>")(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("more than the {bound} bytes an API answer may have"),
                )));
            }
            lab::explain::parse_answer(&t)?
        }
    };
    for line in lab::explain::explain(&answer, lab, lang).lines {
        out(&line);
    }
    Ok(0)
}

/// `audit`: the webhook registrations' table (or `--schema`: its JSON Schema); exit 0, 3 with
/// findings, 1 on error ([`lab::audit_cmd::run`]).
fn audit_command(
    cli: &Cli,
    context: Option<&str>,
    output: lab::audit_cmd::Output,
    schema: bool,
) -> Result<i32, LabError> {
    if schema {
        let text = serde_json::to_string_pretty(&lab::webhook_audit::schema())
            .map_err(|e| LabError::Usage(e.to_string()))?;
        out(&text);
        return Ok(0);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LabError::io("tokio runtime"))?;
    rt.block_on(lab::audit_cmd::run(
        cli.kubeconfig.as_deref(),
        context,
        output,
        cli.lang,
    ))
}

/// The file `check FILE` reads: `FILE` as given (relative to the current directory); when that does
/// not exist and `FILE` is a bare name (`policy.json`, `policy`), the work directory's input of
/// that name (`<workdir>/policy.json`).
fn check_path(file: &std::path::Path, workdir: &Workdir, kind: InputFile) -> PathBuf {
    if !file.exists() && is_bare_name(file) {
        let in_workdir = workdir.input_path(kind);
        if in_workdir.exists() {
            return in_workdir;
        }
    }
    file.to_path_buf()
}

fn is_bare_name(file: &std::path::Path) -> bool {
    file.components().count() == 1
        && matches!(
            file.components().next(),
            Some(std::path::Component::Normal(_))
        )
}

/// After `act N` or `check FILE` failed on a missing input file: what to do next
/// ([`messages::input_missing_hint`]), for the `workdir` and `lab` the command ran with (paths
/// shown absolute); `None` for any other error or command.
fn missing_input_hint(cli: &Cli, workdir: &Workdir, lab: Lab, e: &LabError) -> Option<String> {
    let LabError::InputMissing { path } = e else {
        return None;
    };
    let file = InputFile::from_name(lab, &path.to_string_lossy())?;
    let also_tried = match &cli.command {
        Command::Act { .. } => None,
        Command::Check { file: given } if is_bare_name(given) => Some(workdir.input_path(file)),
        Command::Check { .. } => None,
        _ => return None,
    };
    let absolute = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    Some(messages::input_missing_hint(
        cli.lang,
        file,
        &absolute(workdir.root()),
        also_tried.as_deref().map(absolute).as_deref(),
    ))
}

/// Prints one line on stdout; a closed pipe (`| head`) is not an error.
fn out(line: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
}

fn unknown_input(lang: Lang, lab: Lab, name: &str) -> LabError {
    let names: Vec<_> = InputFile::all(lab).iter().map(|f| f.file_name()).collect();
    LabError::Usage(messages::unknown_input(
        lang,
        name,
        lab.as_str(),
        &names.join(", "),
    ))
}

/// The lab recorded in the work directory's first readable evidence file, else lab B.
fn lab_of(workdir: &Workdir) -> Lab {
    (1..=lab::acts::max_count())
        .find_map(|act| workdir.read_evidence(act).ok().map(|l| l.evidence.lab))
        .unwrap_or(Lab::B)
}

/// What `check` can know without a cluster: values saved in the work directory's evidence, and
/// `policy.json` next to a `policy-ignore.json`. Returns the context and whether it holds every
/// value `kind` depends on.
fn offline_context(
    workdir: &Workdir,
    lab: Lab,
    kind: InputFile,
    file: &std::path::Path,
) -> (Context, bool) {
    let mut ctx = Context::default();
    for act in lab::acts::numbers(lab) {
        if let Ok(l) = workdir.read_evidence(act) {
            if l.evidence.lab != lab {
                continue;
            }
            ctx.evidence_digests.insert(act, l.digest.clone());
            let facts = &l.evidence.facts;
            match act {
                1 => {
                    ctx.node_uid = facts
                        .pointer("/node/uid")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned);
                    ctx.namespaces = facts
                        .get("namespaces")
                        .and_then(|v| serde_json::from_value(v.clone()).ok());
                    ctx.deployment_uid = facts
                        .pointer("/controller_deployment/uid")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned);
                }
                2 => {
                    ctx.policy_uid = facts
                        .pointer("/policy/metadata/uid")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                }
                _ => {}
            }
        }
    }
    if kind == InputFile::PolicyIgnore {
        let sibling = file
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join("policy.json");
        ctx.policy = read_json_input(&sibling, "policy.json").ok();
    }
    let has = |a: u8| ctx.evidence_digests.contains_key(&a);
    let complete = match kind {
        InputFile::Scope => ctx.node_uid.is_some() && ctx.namespaces.is_some(),
        InputFile::Policy => true,
        InputFile::PolicyIgnore => ctx.policy.is_some(),
        InputFile::FreezePlan | InputFile::FreezePlanC | InputFile::ScalePlan => {
            ctx.node_uid.is_some() && ctx.deployment_uid.is_some() && has(3)
        }
        InputFile::HaPlan => ctx.node_uid.is_some() && ctx.deployment_uid.is_some(),
        InputFile::Recovery | InputFile::RecoveryC => ctx.policy_uid.is_some() && has(6),
        InputFile::ReportA | InputFile::ReportB | InputFile::ReportC => has(5) && has(6) && has(7),
    };
    (ctx, complete)
}

// =============================================================================================
// CLUSTER DISPATCH: the one place where `inspect` and `act N` reach the cluster code.
// Wire `lab::labs::inspect` / `lab::labs::run_act` here (build their environment from `cli`:
// workdir, kubeconfig, cri_endpoint, lang) and map their result to an exit code (0 ok, 1 failure).
// =============================================================================================
fn cluster_command(cli: &Cli, lab: Lab, workdir: &Workdir) -> Result<i32, LabError> {
    let env = lab::labs::Env {
        workdir: workdir.clone(),
        kubeconfig: cli.kubeconfig.clone(),
        cri_endpoint: cli.cri_endpoint.clone(),
        audit: lab::audit::AuditSource::from_option(cli.audit_log.clone()),
        ui: lab::labs::Ui {
            en: cli.lang == Lang::En,
            quiet: false,
            label: None,
        },
        registration_bound: std::time::Duration::from_secs(cli.registration_bound),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(LabError::io("tokio runtime"))?;
    match &cli.command {
        Command::Heal => {
            let summary = rt.block_on(until_signal(lab::labs::heal(&env), 0))?;
            let healed: Vec<messages::Healed> = summary
                .healed
                .iter()
                .map(|r| messages::Healed {
                    attempt: &r.attempt.0,
                    action: &r.action,
                    note: r.note.as_deref(),
                })
                .collect();
            for line in messages::heal_lines(cli.lang, &healed, &summary.live, &summary.errors) {
                println!("{line}");
            }
            Ok(if summary.errors.is_empty() { 0 } else { 1 })
        }
        Command::Act { n } => {
            let summary = match rt.block_on(until_signal(lab::labs::run_act(lab, *n, &env), *n)) {
                Ok(s) => s,
                Err(e) => {
                    if lab::diagnostics::worth_collecting(&e) {
                        act_diagnostics(cli, &rt, lab, *n, &e);
                    }
                    return Err(e);
                }
            };
            for line in &summary.lines {
                println!("{line}");
            }
            println!("{}", summary.evidence.display());
            if lab::acts::is_report(lab, *n) {
                // After the report, every act is graded again.
                let results = grade::grade_all(lab, &GradeInput::load(workdir, lab));
                for f in &results {
                    println!("{}", messages::findings(cli.lang, f));
                }
                return Ok(if results.iter().all(|f| f.passed()) {
                    0
                } else {
                    1
                });
            }
            Ok(0)
        }
        Command::Inspect { metrics: true } => {
            let cluster = rt.block_on(env.cluster())?;
            match rt.block_on(lab::metrics::current(&cluster, lab::cluster::POLICY_NAME)) {
                Ok(series) => {
                    println!("{}", messages::metrics_header(cli.lang, series.len()));
                    for (metric, labels, value) in series {
                        let labels: Vec<String> =
                            labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
                        println!("{metric}{{{}}} {value}", labels.join(","));
                    }
                    Ok(0)
                }
                Err(u) => {
                    eprintln!("{}", messages::metrics_unavailable(cli.lang, &u.reason));
                    Ok(1)
                }
            }
        }
        _ => {
            let report = rt.block_on(until_signal(lab::labs::inspect(lab, &env), 0))?;
            let text = serde_json::to_string_pretty(&report)
                .map_err(|e| LabError::Usage(e.to_string()))?;
            println!("{text}");
            Ok(0)
        }
    }
}

/// After an act failed on the cluster: collects its diagnostics into `<workdir>/diagnostics/act-NN/`
/// and prints the three most telling lines and the directory on stderr (the act's own error is
/// printed after, by `main`).
fn act_diagnostics(cli: &Cli, rt: &tokio::runtime::Runtime, lab: Lab, act: u8, e: &LabError) {
    let dir = lab::diagnostics::act_dir(&cli.workdir, act);
    let req = lab::diagnostics::act_request(lab, act, e, dir.clone(), None);
    let summary = rt.block_on(lab::diagnostics::collect(cli.kubeconfig.as_deref(), &req));
    eprintln!("{}", messages::diagnostics_header(cli.lang));
    for l in &summary.telling {
        eprintln!("  {l}");
    }
    eprintln!("{}", messages::diagnostics_written(cli.lang, &dir));
    if !summary.collector_failures.is_empty() {
        eprintln!(
            "{}",
            messages::diagnostics_incomplete(cli.lang, summary.collector_failures.len())
        );
    }
}

// The lab tool's commands run under the process-wide signal handler (lab::signals::until_signal).
use lab::signals::until_signal;

#[cfg(test)]
mod help_tests {
    use super::*;

    /// Every visible command and argument of the tool has its Japanese `--help` text: a command or
    /// option added without one is named here.
    #[test]
    fn every_command_and_argument_has_japanese_help() {
        assert_eq!(
            lab::help::help_untranslated(Cli::command()),
            Vec::<String>::new()
        );
        // The check sees the tool's commands and arguments (it cannot pass on an empty walk).
        let mut all = Cli::command();
        all.build();
        assert!(all.get_subcommands().any(|s| s.get_name() == "check"));
    }

    #[test]
    fn help_follows_lang() {
        let lang = |args: &[&str]| help_lang(args.iter().map(std::ffi::OsString::from));
        assert_eq!(lang(&["--help"]), Lang::Ja);
        assert_eq!(lang(&["--lang", "en", "--help"]), Lang::En);
        assert_eq!(lang(&["check", "--help", "--lang=en"]), Lang::En);
        assert_eq!(lang(&["--lang", "ja", "act", "-h"]), Lang::Ja);
    }
}
