//! API keys, read once from the environment and then taken out of it.
//!
//! A command the model runs could otherwise read handoff's own environment through
//! `/proc/<handoff's pid>/environ` and print the keys into the log and into the next
//! request to the junior's server. So the first read of a key variable keeps the value in
//! this process's memory, overwrites it in place in the environment block (which is what
//! `/proc/PID/environ` shows) and removes the variable; later reads (another session in
//! `eval`, `doctor`) get the kept value. The process is also marked non-dumpable, so other
//! processes of the same user cannot read its memory or environment through `/proc`.

use std::collections::HashMap;
use std::sync::Mutex;

static KEYS: Mutex<Option<HashMap<String, Option<String>>>> = Mutex::new(None);

/// The value of the key variable `name`, or `None` when it is not set.
pub fn read(name: &str) -> Option<String> {
    let mut guard = KEYS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let keys = guard.get_or_insert_with(HashMap::new);
    if let Some(kept) = keys.get(name) {
        return kept.clone();
    }
    let value = std::env::var(name).ok();
    if value.is_some() {
        scrub(name);
    }
    keys.insert(name.to_string(), value.clone());
    value
}

#[cfg(target_os = "linux")]
fn scrub(name: &str) {
    unsafe extern "C" {
        static mut environ: *const *mut libc::c_char;
    }
    let prefix = format!("{name}=");
    // SAFETY: `environ` is the C library's NULL-terminated array of NUL-terminated strings,
    // all in writable memory (the initial stack or the library's heap). Only the bytes of
    // this variable's value are overwritten, with NULs, which leaves a valid (empty)
    // string; the key lock serialises every reader of key variables in this process.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let s = *entry;
            let len = libc::strlen(s);
            let bytes = std::slice::from_raw_parts(s.cast::<u8>(), len);
            if bytes.starts_with(prefix.as_bytes()) {
                for i in prefix.len()..len {
                    std::ptr::write_volatile(s.add(i), 0);
                }
            }
            entry = entry.add(1);
        }
        std::env::remove_var(name);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

#[cfg(not(target_os = "linux"))]
fn scrub(name: &str) {
    // SAFETY: see the Linux version; here only the variable is removed.
    unsafe { std::env::remove_var(name) }
}
