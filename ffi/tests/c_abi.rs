//! Builds the C tests and examples against `include/robota.h` and the freshly built
//! `librobota` (the cdylib next to this test binary), and runs them.
//!
//! Needs a C and a C++ compiler (`cc`/`c++`, or `CC`/`CXX`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ffi/ has a parent")
        .to_path_buf()
}

/// The directory holding `librobota.so`/`.dylib`.
///
/// `cargo test` builds this package's library only as a test harness, never as the cdylib (and the
/// crate has no rlib: its name would collide with the engine's `librobota.rlib`). So the cdylib
/// next to this test binary exists only if something built it (`cargo build -p robota-ffi`, as
/// `.ci/run` does first); when it is missing or older than the engine's or the C ABI's sources,
/// it is built here once, into a target dir of its own (the shared one is locked by the running
/// `cargo test`).
fn library_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            let deps = exe.parent().expect("deps dir");
            let profile = deps.parent().expect("profile dir");
            // A cdylib older than the newest engine or C ABI source file is stale.
            let lib = std::fs::metadata(profile.join(LIBRARY)).and_then(|m| m.modified());
            if let Ok(lib) = lib {
                let root = workspace_root();
                let newest = ["core/src", "ffi/src", "Cargo.lock"]
                    .iter()
                    .filter_map(|p| newest_modification(&root.join(p)))
                    .max();
                if newest.is_some_and(|newest| lib >= newest) {
                    return profile.to_path_buf();
                }
            }
            let target = profile.parent().expect("target dir").join("ffi-c-tests");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            run(Command::new(cargo)
                .args(["build", "--locked", "-p", "robota-ffi", "--lib"])
                .env("CARGO_TARGET_DIR", &target)
                .current_dir(workspace_root()));
            let dir = target.join("debug");
            assert!(
                dir.join(LIBRARY).exists(),
                "{LIBRARY} not found in {} after building it",
                dir.display()
            );
            dir
        })
        .clone()
}

/// The newest modification time of `path` or any file below it.
fn newest_modification(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| newest_modification(&entry.path()))
        .max()
}

const LIBRARY: &str = if cfg!(target_os = "macos") {
    "librobota.dylib"
} else {
    "librobota.so"
};

fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Compiles one C11 source with the strict flags and links it to librobota.
fn build_c(source: &Path, name: &str) -> PathBuf {
    let root = workspace_root();
    let lib = library_dir();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    run(Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(source)
        .arg("-L")
        .arg(&lib)
        .arg("-lrobota")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&out));
    out
}

#[test]
fn c_test_basic_passes() {
    let root = workspace_root();
    let exe = build_c(&root.join("ffi/tests/c/test_basic.c"), "test_basic");
    let stdout = run(Command::new(&exe).current_dir(env!("CARGO_TARGET_TMPDIR")));
    assert!(stdout.contains("all checks passed"), "{stdout}");
}

#[test]
fn c_quickstart_runs() {
    let root = workspace_root();
    let exe = build_c(&root.join("examples/c/quickstart.c"), "quickstart");
    let stdout = run(Command::new(&exe).current_dir(env!("CARGO_TARGET_TMPDIR")));
    assert!(stdout.contains("Hello from C!"), "{stdout}");
}

#[test]
fn header_compiles_as_cpp17() {
    let root = workspace_root();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    run(Command::new(cxx)
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
        ])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("ffi/tests/c/header_cpp.cpp")));
}
