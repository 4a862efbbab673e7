//! A handler library is never unloaded: its initialisers may have started threads that run
//! its code, and dlclose(3) unmapping that code under them crashed `spidey serve --mode
//! prefork --handler` (SIGSEGV instead of the refusal's exit code 2, 2 runs in 100 here)
//! when the new thread first ran after the refusal dropped the library. Checked here
//! without the race: after the handle is dropped, and after a load that fails past
//! dlopen, the library must still be mapped (/proc/self/maps).

use spidey_sys::handler::HandlerLib;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `source` into a shared library named `name` in a fresh directory.
fn library(name: &str, source: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spidey-sys-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let lib = dir.join(format!("{name}.so"));
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-pthread", "-I"])
        .arg(&include)
        .arg("-o")
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("cc (the README's test command installs it)");
    assert!(status.success(), "cc failed on {name}");
    lib
}

/// Removes the library's directory once the test has looked (the mapping outlives the
/// file, so the library stays loaded).
fn remove(lib: &Path) {
    let _ = std::fs::remove_dir_all(lib.parent().unwrap());
}

fn mapped(lib: &Path) -> bool {
    std::fs::read_to_string("/proc/self/maps").unwrap().contains(lib.to_str().unwrap())
}

const HANDLER: &str = r#"
#include "spidey_handler.h"
uint32_t spidey_handler_abi_version(void) { return SPIDEY_HANDLER_ABI_VERSION; }
int spidey_handle(const struct spidey_request *req, const struct spidey_response *res) {
    (void)req; (void)res; return 0;
}
"#;

const WRONG_ABI: &str = r#"
#include <stdint.h>
uint32_t spidey_handler_abi_version(void) { return 0xdead; }
"#;

#[test]
fn a_loaded_handler_library_stays_mapped_after_its_handle_is_dropped() {
    let lib = library("kept", HANDLER);
    {
        let _handler = HandlerLib::load(&lib).expect("a valid handler library");
        assert!(mapped(&lib));
    } // the handle is dropped here
    assert!(mapped(&lib), "dropping the handle unloaded the library");
    remove(&lib);
}

#[test]
fn a_library_refused_after_dlopen_stays_mapped() {
    let lib = library("refused", WRONG_ABI);
    assert!(HandlerLib::load(&lib).is_err(), "a wrong ABI version is refused");
    assert!(mapped(&lib), "refusing the library unloaded it");
    remove(&lib);
}
