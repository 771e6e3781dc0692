//! `kca-webhook-lab`: placeholder entry point until the CLI lands.

fn main() {
    eprintln!("kca-webhook-lab: not implemented yet");
    std::process::exit(2);
}
