//! File I/O relative to the repository's directory handle, immune to swapped paths.
//!
//! The file tools' confinement (`agent::confine`) decides whether a path may be touched
//! and resolves it to a canonical, symlink-free relative path; this module then opens
//! exactly that, relative to
//! a handle on the root opened once, with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//! where the kernel has it (Linux 5.6+), else by a walk that opens one component at a time
//! with `O_NOFOLLOW`. If anything (a command's background child, say) swapped a directory
//! for a symlink between the check and the use, the open fails instead of following it
//! out of the repository. New files are made with `O_EXCL` beside the target and renamed
//! over it inside the same directory handle; they get `0666` minus the umask, as files
//! made by any other editor do. Reads refuse FIFOs, devices and sockets (opened with
//! `O_NONBLOCK`, so a FIFO cannot hang the session before the check).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::Arc;

/// A handle on the repository root.
#[derive(Debug, Clone)]
pub struct RootDir {
    fd: Arc<OwnedFd>,
}

/// What kind of thing a path names, without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Special,
}

/// The refusal when the file is a FIFO, socket or device.
pub fn not_regular() -> io::Error {
    io::Error::other("not a regular file (a FIFO, socket or device); refused")
}

impl RootDir {
    pub fn open(root: &Path) -> io::Result<RootDir> {
        let c = cstring(root.as_os_str())?;
        // SAFETY: open(2) on a NUL-terminated path; the result is checked.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        Ok(RootDir {
            fd: Arc::new(owned(fd)?),
        })
    }

    /// Opens `rel` (relative, no `..`) for reading; refuses anything but a regular file.
    pub fn open_read(&self, rel: &Path) -> io::Result<File> {
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        let fd = self.open_at(rel, flags, 0)?;
        let file = File::from(fd);
        if !file.metadata()?.file_type().is_file() {
            return Err(not_regular());
        }
        Ok(file)
    }

    /// The kind of `rel`, or `None` when nothing is there.
    pub fn kind(&self, rel: &Path) -> io::Result<Option<Kind>> {
        let (dir, name) = match split(rel) {
            Some((parent, name)) => (self.open_dir(parent)?, name),
            None => return Ok(Some(Kind::Dir)),
        };
        let Some(st) = stat_at(&dir, &cstring(name)?)? else {
            return Ok(None);
        };
        Ok(Some(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Special,
        }))
    }

    /// Writes `bytes` to `rel` atomically, creating missing parent directories; an
    /// existing file keeps its permission bits.
    pub fn write_atomic(&self, rel: &Path, bytes: &[u8]) -> io::Result<()> {
        self.write_atomic_mode(rel, bytes, None)
    }

    /// As [`RootDir::write_atomic`], with the permission bits `mode` when given (putting a
    /// file back exactly as it was, executable bit included).
    pub fn write_atomic_mode(&self, rel: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        let (parent, name) =
            split(rel).ok_or_else(|| io::Error::other("cannot write the repository root"))?;
        let dir = self.create_dirs(parent)?;
        write_in(&dir, name, bytes, mode)
    }

    /// Puts a checkpoint's file back at `rel` with the permission bits `mode`: as
    /// [`RootDir::write_atomic_mode`], except that a symlink or file standing where the
    /// checkpoint has a directory is removed and replaced by the directory (a link the
    /// model planted is never written through, whatever it points at).
    pub fn restore_file(&self, rel: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
        let (parent, name) =
            split(rel).ok_or_else(|| io::Error::other("cannot write the repository root"))?;
        let dir = self.replace_dirs(parent)?;
        write_in(&dir, name, bytes, Some(mode))
    }

    /// Puts a checkpoint's symlink back at `rel` (pointing at `target`), with the same
    /// directory rule as [`RootDir::restore_file`]; whatever non-directory is at `rel` goes.
    pub fn restore_link(&self, rel: &Path, target: &OsStr) -> io::Result<()> {
        let (parent, name) =
            split(rel).ok_or_else(|| io::Error::other("cannot write the repository root"))?;
        let dir = self.replace_dirs(parent)?;
        let name_c = cstring(name)?;
        if stat_at(&dir, &name_c)?.is_some_and(|st| st.st_mode & libc::S_IFMT != libc::S_IFDIR) {
            unlink_at(&dir, &name_c, 0)?;
        }
        let target = cstring(target)?;
        // SAFETY: symlinkat in a directory fd we own, NUL-terminated strings.
        if unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name_c.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The permission bits of the regular file `rel`; `None` when there is none (or a
    /// symlink is on the way).
    pub fn file_mode(&self, rel: &Path) -> Option<u32> {
        let (parent, name) = split(rel)?;
        let dir = self.open_dir(parent).ok()?;
        let st = stat_at(&dir, &cstring(name).ok()?).ok()??;
        (st.st_mode & libc::S_IFMT == libc::S_IFREG).then_some(st.st_mode & 0o7777)
    }

    /// Removes the empty directory `rel` (never through a symlink).
    pub fn remove_dir(&self, rel: &Path) -> io::Result<()> {
        let (parent, name) =
            split(rel).ok_or_else(|| io::Error::other("cannot remove the repository root"))?;
        let dir = self.open_dir(parent)?;
        unlink_at(&dir, &cstring(name)?, libc::AT_REMOVEDIR)
    }

    /// As `create_dirs`, but a non-directory (a symlink above all) where a directory must
    /// be is unlinked first, never followed.
    fn replace_dirs(&self, rel: &Path) -> io::Result<OwnedFd> {
        let mut dir = self.dup_root()?;
        for name in names(rel)? {
            let c = cstring(name)?;
            if stat_at(&dir, &c)?.is_some_and(|st| st.st_mode & libc::S_IFMT != libc::S_IFDIR) {
                unlink_at(&dir, &c, 0)?;
            }
            // SAFETY: mkdirat in a directory fd we own; EEXIST is fine (opened next with
            // O_NOFOLLOW).
            unsafe {
                libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777);
            }
            dir = openat_nofollow(
                dir.as_raw_fd(),
                &c,
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                0,
            )?;
        }
        Ok(dir)
    }
}

/// Writes `bytes` to `name` in `dir` through a new file renamed over it (a symlink at
/// `name` is replaced, never followed); `mode` as [`RootDir::write_atomic_mode`] says.
fn write_in(dir: &OwnedFd, name: &OsStr, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let name_c = cstring(name)?;
    let existing = stat_at(dir, &name_c)?.map(|st| st.st_mode);
    if existing.is_some_and(|m| m & libc::S_IFMT == libc::S_IFDIR) {
        return Err(io::Error::other("is a directory"));
    }
    let mode = match mode {
        Some(bits) => Some(libc::S_IFREG | (bits & 0o7777)),
        None => existing,
    };
    let tmp_name = temp_name();
    let tmp_c = cstring(OsStr::new(&tmp_name))?;
    // SAFETY: openat on our directory fd; O_EXCL|O_NOFOLLOW create a new file only.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            tmp_c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o666 as libc::c_uint,
        )
    };
    let mut file = File::from(owned(fd)?);
    let written = (|| {
        file.write_all(bytes)?;
        if let Some(m) = mode.filter(|m| m & libc::S_IFMT == libc::S_IFREG) {
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(std::fs::Permissions::from_mode(m & 0o7777))?;
        }
        file.sync_data()?;
        // SAFETY: renameat within one directory fd we own, NUL-terminated names.
        let rc = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                tmp_c.as_ptr(),
                dir.as_raw_fd(),
                name_c.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })();
    if written.is_err() {
        // SAFETY: unlinkat of the temp name we created, in our directory fd.
        unsafe {
            libc::unlinkat(dir.as_raw_fd(), tmp_c.as_ptr(), 0);
        }
    }
    written
}

impl RootDir {
    /// Removes the file `rel` (never following a symlink: a link is removed itself).
    pub fn remove_file(&self, rel: &Path) -> io::Result<()> {
        let (parent, name) =
            split(rel).ok_or_else(|| io::Error::other("cannot remove the repository root"))?;
        let dir = self.open_dir(parent)?;
        let c = cstring(name)?;
        // SAFETY: unlinkat in a directory fd we own.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Opens the directory `rel` (`""` for the root).
    fn open_dir(&self, rel: &Path) -> io::Result<OwnedFd> {
        self.open_at(rel, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
    }

    /// Creates the directories of `rel` that are missing and opens the last one.
    fn create_dirs(&self, rel: &Path) -> io::Result<OwnedFd> {
        let mut dir = self.dup_root()?;
        for name in names(rel)? {
            let c = cstring(name)?;
            // SAFETY: mkdirat in a directory fd we own; EEXIST is fine (opened next, with
            // O_NOFOLLOW, so an existing symlink is refused rather than followed).
            unsafe {
                libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777);
            }
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            dir = owned(fd)?;
        }
        Ok(dir)
    }

    fn dup_root(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// Opens `rel` beneath the root, refusing any symlink on the way.
    fn open_at(&self, rel: &Path, flags: libc::c_int, mode: libc::c_uint) -> io::Result<OwnedFd> {
        let parts = names(rel)?;
        if parts.is_empty() {
            let c = cstring(OsStr::new("."))?;
            return openat_nofollow(self.fd.as_raw_fd(), &c, flags, mode);
        }
        #[cfg(target_os = "linux")]
        match openat2(self.fd.as_raw_fd(), rel, flags, mode) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
            other => return other,
        }
        // The walk: every directory opened with O_NOFOLLOW relative to the previous one.
        let (last, dirs) = parts
            .split_last()
            .ok_or_else(|| io::Error::other("empty path"))?;
        let mut dir = self.dup_root()?;
        for name in dirs {
            let c = cstring(name)?;
            dir = openat_nofollow(
                dir.as_raw_fd(),
                &c,
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                0,
            )?;
        }
        openat_nofollow(dir.as_raw_fd(), &cstring(last)?, flags, mode)
    }
}

#[cfg(target_os = "linux")]
fn openat2(
    dirfd: RawFd,
    rel: &Path,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> io::Result<OwnedFd> {
    let c = cstring(rel.as_os_str())?;
    // SAFETY: open_how is plain data; zeroed then filled field by field.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_NOFOLLOW) as u64;
    how.mode = if flags & libc::O_CREAT != 0 {
        u64::from(mode)
    } else {
        0
    };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: openat2 reads `how` (size given) and the NUL-terminated path.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    owned(i32::try_from(fd).unwrap_or(-1))
}

/// `fstatat` of `name` in `dir` without following a symlink; `None` when nothing is there.
fn stat_at(dir: &OwnedFd, name: &CString) -> io::Result<Option<libc::stat>> {
    // SAFETY: fstatat on a directory fd we own, a NUL-terminated name and a zeroed struct
    // the call fills in.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc == 0 {
        return Ok(Some(st));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::NotFound {
        Ok(None)
    } else {
        Err(e)
    }
}

/// `unlinkat(dir, name, flags)`.
fn unlink_at(dir: &OwnedFd, name: &CString, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unlinkat in a directory fd we own, with a NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn openat_nofollow(
    dirfd: RawFd,
    name: &CString,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> io::Result<OwnedFd> {
    // SAFETY: openat relative to a directory fd we own, with a NUL-terminated name.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags | libc::O_NOFOLLOW, mode) };
    owned(fd)
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor returned by the kernel, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::other("path contains a NUL byte"))
}

/// The plain names of a relative path; anything else (`..`, a root) is refused.
fn names(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::other("not a plain relative path")),
        })
        .collect()
}

fn split(rel: &Path) -> Option<(&Path, &OsStr)> {
    Some((rel.parent().unwrap_or(Path::new("")), rel.file_name()?))
}

fn temp_name() -> String {
    use rand::Rng as _;
    let n: u64 = rand::rng().random();
    format!(".handoff-write-{n:016x}")
}

/// Whether an I/O error means the path changed under the check (a symlink appeared, or
/// the path left the root), so the model is told it was refused.
pub fn is_escape(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EXDEV))
}
