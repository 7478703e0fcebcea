//! POSIX semantics through the mount, each held to what the host
//! filesystem does in the same test: the same steps run once through the
//! mount and once in a plain host directory, as root or as the
//! unprivileged user 65534 (`setpriv`), and what each observes (read from
//! the host side, where the kernel's attribute cache cannot hide a change)
//! must be the same. Both inode tables.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use lockref_fuse::InodeTable;

mod common;
use common::compare::*;

/// A write, a truncate and a chown by someone else than root clear the
/// set-user-ID and set-group-ID bits, as on the host; the write succeeds.
/// (Before, the kernel's SETATTR on the writer's behalf was refused: EPERM,
/// the bits kept.)
fn setid_bits_are_cleared_by_non_owners<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| {
            file(root, "suid", 0o4777, 0);
            file(root, "sgid", 0o2777, 0);
            file(root, "trunc", 0o6777, 0);
            file(root, "mine", 0o6777, 65534);
        },
        "def append(p):\n\
         \x20   with open(os.path.join(A, p), 'a') as f: f.write('more\\n')\n\
         print('write suid', attempt(lambda: append('suid')), mode('suid'))\n\
         print('write sgid', attempt(lambda: append('sgid')), mode('sgid'))\n\
         print('truncate', attempt(lambda: os.truncate(os.path.join(A, 'trunc'), 0)), mode('trunc'))\n\
         print('chown own', attempt(lambda: os.chown(os.path.join(A, 'mine'), 65534, 65534)), mode('mine'))\n",
        true,
    );
    assert!(seen.contains("write suid ok 0o777"), "{seen}");
}

on_both_tables!(setid_bits_are_cleared_by_non_owners);

/// open(2) of a directory needs read permission only: a directory the
/// caller may read but not search opens. (Before: EACCES, the server
/// reopened it with `openat(fd, ".")`, which needs search permission.)
fn a_readable_unsearchable_directory_opens<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| {
            fs::create_dir(root.join("d")).unwrap();
            chown(&root.join("d"), 65534);
            fs::set_permissions(root.join("d"), fs::Permissions::from_mode(0o600)).unwrap();
        },
        "print('open', attempt(lambda: os.close(os.open(os.path.join(A, 'd'), os.O_RDONLY))))\n\
         print('search', attempt(lambda: os.stat(os.path.join(A, 'd', 'x'))))\n",
        true,
    );
    assert!(seen.contains("open ok"), "{seen}");
}

on_both_tables!(a_readable_unsearchable_directory_opens);

/// `chown(f, -1, -1)` updates the ctime, as ext4 does. (Before, the
/// server did nothing for a SETATTR with only the ctime.)
fn chown_to_nobody_changes_the_ctime<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| file(root, "f", 0o644, 0),
        "before = os.stat(os.path.join(S, 'f')).st_ctime_ns\n\
         time.sleep(0.02)\n\
         os.chown(os.path.join(A, 'f'), -1, -1)\n\
         print('ctime moved', os.stat(os.path.join(S, 'f')).st_ctime_ns > before)\n",
        false,
    );
    assert!(seen.contains("ctime moved True"), "{seen}");
}

on_both_tables!(chown_to_nobody_changes_the_ctime);

/// A sticky directory protects others' files; a rename over an empty
/// directory replaces it and over a full one fails; hard links count.
fn sticky_dirs_renames_over_dirs_and_link_counts<T: InodeTable>() {
    same_as_host::<T>(
        |root| {
            fs::create_dir(root.join("tmp")).unwrap();
            fs::set_permissions(root.join("tmp"), fs::Permissions::from_mode(0o1777)).unwrap();
            file(&root.join("tmp"), "roots", 0o666, 0);
            for d in ["a", "empty", "full", "full/x"] {
                fs::create_dir(root.join(d)).unwrap();
            }
            for d in ["a", "empty", "full", "full/x", ""] {
                chown(&root.join(d), 65534);
            }
            file(root, "f", 0o644, 65534);
        },
        "print('sticky unlink', attempt(lambda: os.unlink(os.path.join(A, 'tmp', 'roots'))))\n\
         print('sticky rename', attempt(lambda: os.rename(os.path.join(A, 'tmp', 'roots'), os.path.join(A, 'tmp', 'r2'))))\n\
         print('over empty', attempt(lambda: os.rename(os.path.join(A, 'a'), os.path.join(A, 'empty'))))\n\
         print('over full', attempt(lambda: os.rename(os.path.join(A, 'empty'), os.path.join(A, 'full'))))\n\
         print('dir over file', attempt(lambda: os.rename(os.path.join(A, 'full'), os.path.join(A, 'f'))))\n\
         print('link', attempt(lambda: os.link(os.path.join(A, 'f'), os.path.join(A, 'g'))))\n\
         print('nlink', os.stat(os.path.join(S, 'f')).st_nlink, os.stat(os.path.join(A, 'g')).st_nlink)\n\
         print('dir nlink', os.stat(os.path.join(S, 'full')).st_nlink)\n",
        true,
    );
}

on_both_tables!(sticky_dirs_renames_over_dirs_and_link_counts);

/// Times before 1970 are stored exactly, nanoseconds included, as on the
/// host. (Before, they were clamped to 1970.)
fn times_before_1970_are_exact<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| file(root, "old", 0o644, 0),
        "t = -315619199876543211\n\
         os.utime(os.path.join(A, 'old'), ns=(t, t + 1))\n\
         st = os.stat(os.path.join(S, 'old'))\n\
         print('atime', st.st_atime_ns, 'mtime', st.st_mtime_ns)\n\
         print('through', os.stat(os.path.join(A, 'old')).st_mtime_ns)\n",
        false,
    );
    assert!(
        seen.contains("atime -315619199876543211 mtime -315619199876543210"),
        "{seen}"
    );
}

on_both_tables!(times_before_1970_are_exact);
