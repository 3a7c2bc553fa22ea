//! Build script: generates include/loader.h with cbindgen from the `ffi` module, gives the
//! cdylib its SONAME, and checks that every exported symbol is named `loader_*`.
//!
//! Environment:
//! - `LOADER_CHECK_HEADER=1`: never write the header; fail the build if the committed
//!   include/loader.h is missing, stale or cannot be generated. Unset, empty or `0`: write the
//!   header when its content changed, and only warn when the sources do not parse or export a
//!   symbol without the `loader_` prefix, so a half-finished edit still builds.

use std::env;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

const HEADER: &str = "include/loader.h";
/// The module that holds the whole `extern "C"` surface and every type it names.
const FFI_ROOT: &str = "src/ffi/mod.rs";
const CHECK_VAR: &str = "LOADER_CHECK_HEADER";

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // A hand edit of the header must rerun the check, not hit a cached pass.
    println!("cargo:rerun-if-changed={HEADER}");
    println!("cargo:rerun-if-env-changed={CHECK_VAR}");

    let manifest_dir = PathBuf::from(env_var("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env_var("OUT_DIR"));

    set_soname();

    let check = check_requested();
    let header_path = manifest_dir.join(HEADER);
    let (generated, foreign) = match generate(&manifest_dir) {
        Ok(generated) => generated,
        Err(error) if check => panic!("{CHECK_VAR}=1: cannot generate {HEADER}: {error}"),
        Err(error) => {
            warn(&format!(
                "{HEADER} not regenerated (it may be stale): {error}"
            ));
            return;
        }
    };

    if !foreign.is_empty() {
        let message = format!(
            "exported symbols without the loader_ prefix: {}",
            foreign.join(", ")
        );
        if check {
            panic!("{CHECK_VAR}=1: {message}");
        }
        warn(&message);
    }

    if check {
        check_header(&header_path, &out_dir, &generated);
    } else if let Err(error) = write_if_changed(&header_path, &generated) {
        warn(&format!("cannot write {}: {error}", header_path.display()));
    }
}

/// A SONAME, so a host linked with `-lloader` records the major version it was built against.
/// Only for ELF targets, whose linkers take the flag.
fn set_soname() {
    let is_elf = env::var("CARGO_CFG_TARGET_FAMILY").as_deref() == Ok("unix")
        && env::var("CARGO_CFG_TARGET_VENDOR").as_deref() != Ok("apple");
    if is_elf {
        let major = env_var("CARGO_PKG_VERSION_MAJOR");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libloader.so.{major}");
    }
}

/// Every exported symbol cbindgen found that lacks the `loader_` prefix.
///
/// This is what keeps `nm -D` down to `loader_*`. A linker version script cannot: rustc already
/// passes one naming each `#[no_mangle]` item as global, those exact names beat a `local: *`
/// wildcard in LLD, and GNU ld refuses a second anonymous version script outright.
fn foreign_symbols(bindings: &cbindgen::Bindings) -> Vec<String> {
    bindings
        .dynamic_symbols_names()
        .filter(|name| !name.starts_with("loader_"))
        .map(str::to_owned)
        .collect()
}

fn check_requested() -> bool {
    let value = env::var_os(CHECK_VAR).unwrap_or_default();
    match value.to_str() {
        Some("" | "0") => false,
        Some("1") => true,
        // A typo such as `true` must not silently skip the check.
        _ => panic!("{CHECK_VAR} must be unset, 0 or 1, not {value:?}"),
    }
}

/// The header cbindgen would write, as bytes, and the exported symbols anywhere in the crate
/// that break the naming rule.
fn generate(manifest_dir: &Path) -> Result<(Vec<u8>, Vec<String>), String> {
    let config = cbindgen::Config::from_file(manifest_dir.join("cbindgen.toml"))?;
    // The header comes from the ffi module alone: over the whole crate, cbindgen would also emit
    // every `pub const` of the inner layers, and the types they name, as C declarations.
    let header = bindings(&config, &manifest_dir.join(FFI_ROOT))?;
    let mut generated = Vec::new();
    header.write(&mut generated);
    // cbindgen writes nothing when it detects it is running inside its own macro expansion;
    // an empty header must never replace a real one.
    if generated.is_empty() {
        return Err("cbindgen produced no output".to_owned());
    }
    // Symbols are checked over the whole crate, since a `#[no_mangle]` item exports from any
    // module.
    let crate_wide = bindings(&config, &manifest_dir.join("src/lib.rs"))?;
    Ok((generated, foreign_symbols(&crate_wide)))
}

/// Parses from `root`, following `mod` items exactly as `with_crate` does but without spawning
/// `cargo metadata`: nothing to resolve, so it works offline and takes no cargo lock.
fn bindings(config: &cbindgen::Config, root: &Path) -> Result<cbindgen::Bindings, String> {
    cbindgen::Builder::new()
        .with_config(config.clone())
        .with_src(root)
        .generate()
        .map_err(|error| error.to_string())
}

fn check_header(header_path: &Path, out_dir: &Path, generated: &[u8]) {
    let committed = fs::read(header_path);
    if committed.as_deref().ok() == Some(generated) {
        return;
    }
    // Leave the expected header where a developer can diff it against the committed one.
    let expected = out_dir.join("loader.h");
    let saved = fs::write(&expected, generated).is_ok();
    let why = match committed {
        Ok(_) => "differs from what the Rust sources generate".to_owned(),
        Err(error) => format!("cannot be read ({error})"),
    };
    panic!(
        "{CHECK_VAR}=1: the committed {HEADER} {why}.\n\
         Rebuild without {CHECK_VAR} to regenerate it, then commit it.{}",
        if saved {
            format!("\nExpected header: {}", expected.display())
        } else {
            String::new()
        }
    );
}

/// Writes only when the bytes differ, so an unchanged header keeps its mtime and does not
/// trigger rebuilds of C code that includes it. The rename means a concurrent reader never sees
/// a half-written file.
fn write_if_changed(path: &Path, content: &[u8]) -> io::Result<()> {
    if fs::read(path).is_ok_and(|old| old == content) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    fs::write(&tmp, content)?;
    fs::rename(&tmp, path)
}

/// `cargo:warning` shows one line per directive, and cbindgen's errors span several.
fn warn(message: &str) {
    for line in message.lines() {
        println!("cargo:warning={line}");
    }
}

fn env_var(name: &str) -> String {
    env::var(name).unwrap_or_else(|_| panic!("cargo did not set {name}"))
}
