//! Extended attributes and POSIX ACLs through the mount: the system calls
//! held to what the host does (as root and as the unprivileged user
//! 65534), the ACL programs (`setfacl`, `getfacl`), the copies that must
//! keep both (`cp -a`, `tar --xattrs --acls`, `rsync -aAX`), and the
//! attack in which a directory's ACL was bypassed on a cached path. Both
//! inode tables. Before the server served them, every call here failed
//! with `EOPNOTSUPP` (the kernel's answer to the server's `ENOSYS`).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use lockref_fuse::InodeTable;

mod common;
use common::compare::*;
use common::*;

/// Fails the calling test unless `program` is installed (`.ci/run`
/// installs them with apt): a test that cannot run says so in its result.
fn need(program: &str) {
    // Under the lock: the probe's pipes are descriptors a concurrent
    // test would count as leaked.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{program} is not installed: this test drives it (Debian: apt-get install {})",
        match program {
            "setfacl" | "getfacl" => "acl",
            "getfattr" | "setfattr" => "attr",
            other => other,
        }
    );
}

/// `getfattr -d -m -` of `path`, without the line naming the file.
fn all_xattrs(path: &Path) -> String {
    let out = sh(&format!(
        "getfattr -d -m - --absolute-names '{}'",
        path.display()
    ));
    out.lines()
        .filter(|l| !l.starts_with("# file:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `getfacl` of `path`, without the line naming the file.
fn acl_of(path: &Path) -> String {
    let out = sh(&format!("getfacl --absolute-names '{}'", path.display()));
    out.lines()
        .filter(|l| !l.starts_with("# file:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The xattr system calls as root: every namespace, the create and
/// replace flags, sizes, and files, directories, symlinks and FIFOs.
fn xattr_calls_as_root<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| {
            file(root, "f", 0o644, 0);
            fs::create_dir(root.join("d")).unwrap();
            std::os::unix::fs::symlink("f", root.join("l")).unwrap();
            nix::unistd::mkfifo(&root.join("p"), nix::sys::stat::Mode::from_bits_truncate(0o644))
                .unwrap();
        },
        "f, d, l, p = (os.path.join(A, n) for n in 'fdlp')\n\
         def get(p, n, follow=True):\n\
         \x20   try: return os.getxattr(p, n, follow_symlinks=follow)\n\
         \x20   except OSError as e: return errno.errorcode[e.errno]\n\
         print('set', attempt(lambda: os.setxattr(f, 'user.a', b'1')))\n\
         print('create again', attempt(lambda: os.setxattr(f, 'user.a', b'2', os.XATTR_CREATE)))\n\
         print('replace', attempt(lambda: os.setxattr(f, 'user.a', b'3', os.XATTR_REPLACE)), get(f, 'user.a'))\n\
         print('replace missing', attempt(lambda: os.setxattr(f, 'user.b', b'3', os.XATTR_REPLACE)))\n\
         print('empty value', attempt(lambda: os.setxattr(f, 'user.e', b'')), get(f, 'user.e'))\n\
         print('big value', attempt(lambda: os.setxattr(f, 'user.big', bytes(range(256)) * 12)), len(get(f, 'user.big')))\n\
         print('trusted', attempt(lambda: os.setxattr(f, 'trusted.t', b't')), get(f, 'trusted.t'))\n\
         print('security', attempt(lambda: os.setxattr(f, 'security.s', b's')), get(f, 'security.s'))\n\
         print('unknown namespace', attempt(lambda: os.setxattr(f, 'bogus.x', b'x')))\n\
         print('list', sorted(os.listxattr(f)))\n\
         print('remove', attempt(lambda: os.removexattr(f, 'user.a')), get(f, 'user.a'))\n\
         print('remove missing', attempt(lambda: os.removexattr(f, 'user.a')))\n\
         print('dir', attempt(lambda: os.setxattr(d, 'user.d', b'd')), get(d, 'user.d'), os.listxattr(d))\n\
         print('symlink', attempt(lambda: os.setxattr(l, 'user.l', b'l', follow_symlinks=False)), get(l, 'user.l', False))\n\
         print('symlink trusted', attempt(lambda: os.setxattr(l, 'trusted.l', b'l', follow_symlinks=False)), get(l, 'trusted.l', False))\n\
         print('fifo', attempt(lambda: os.setxattr(p, 'user.p', b'p')), get(p, 'user.p'))\n\
         print('observed', sorted(os.listxattr(os.path.join(S, 'f'))), os.getxattr(os.path.join(S, 'f'), 'user.big')[:4])\n",
        false,
    );
    assert!(seen.contains("replace ok b'3'"), "{seen}");
    assert!(seen.contains("trusted ok b't'"), "{seen}");
}

/// The xattr system calls as a user: read permission for `user.*`, write
/// permission to set one, `trusted.*` invisible and unwritable,
/// `security.*` readable but unwritable. The last two are the server's
/// own checks: its threads keep root's capabilities.
fn xattr_calls_as_a_user<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| {
            file(root, "roots", 0o644, 0);
            file(root, "secret", 0o600, 0);
            file(root, "mine", 0o644, 65534);
            for f in ["roots", "secret", "mine"] {
                for (name, value) in [("user.a", "1"), ("trusted.t", "t"), ("security.s", "s")] {
                    rustix::fs::setxattr(root.join(f), name, value.as_bytes(), rustix::fs::XattrFlags::empty())
                        .unwrap();
                }
            }
        },
        "def get(p, n):\n\
         \x20   try: return os.getxattr(os.path.join(A, p), n)\n\
         \x20   except OSError as e: return errno.errorcode[e.errno]\n\
         def lst(p):\n\
         \x20   try: return sorted(os.listxattr(os.path.join(A, p)))\n\
         \x20   except OSError as e: return errno.errorcode[e.errno]\n\
         def put(p, n):\n\
         \x20   return attempt(lambda: os.setxattr(os.path.join(A, p), n, b'x'))\n\
         def rm(p, n):\n\
         \x20   return attempt(lambda: os.removexattr(os.path.join(A, p), n))\n\
         for p in ['roots', 'secret', 'mine']:\n\
         \x20   print(p, get(p, 'user.a'), get(p, 'trusted.t'), get(p, 'security.s'), lst(p))\n\
         \x20   print(p, 'set', put(p, 'user.a'), put(p, 'trusted.t'), put(p, 'security.s'), put(p, 'user.new'))\n\
         \x20   print(p, 'remove', rm(p, 'user.a'), rm(p, 'trusted.t'), rm(p, 'security.s'))\n",
        true,
    );
    assert!(
        seen.contains("mine b'1' ENODATA b's' ['security.s', 'user.a']"),
        "{seen}"
    );
    assert!(seen.contains("mine set ok EPERM EPERM ok"), "{seen}");
}

/// A new file's mode under the caller's umask and a directory's default
/// ACL, as the host makes it: the umask applies only where no default ACL
/// does, and the default ACL is inherited (`FUSE_DONT_MASK`, applied by
/// the server).
fn the_umask_and_default_acls<T: InodeTable>() {
    need("setfacl");
    let seen = same_as_host::<T>(
        |root| {
            for d in ["plain", "inherits"] {
                fs::create_dir(root.join(d)).unwrap();
            }
            let inherits = root.join("inherits").display().to_string();
            sh(&format!(
                "setfacl -d -m u::rwx,g::rwx,o::r-x,u:65534:rwx '{inherits}'"
            ));
        },
        "os.umask(0o027)\n\
         for d in ['plain', 'inherits']:\n\
         \x20   open(os.path.join(A, d, 'f'), 'w').close()\n\
         \x20   os.mkdir(os.path.join(A, d, 'sub'), 0o777)\n\
         \x20   os.mknod(os.path.join(A, d, 'fifo'), 0o666 | stat.S_IFIFO)\n\
         \x20   for n in ['f', 'sub', 'fifo']:\n\
         \x20       p = os.path.join(S, d, n)\n\
         \x20       acl = [x for x in os.listxattr(p) if x.startswith('system.')]\n\
         \x20       print(d, n, mode(os.path.join(d, n)), sorted(acl))\n",
        false,
    );
    assert!(seen.contains("plain f 0o640 []"), "{seen}");
    assert!(seen.contains("inherits f 0o664"), "{seen}");
}

/// `setfacl` and `getfacl` through the mount: an ACL entry grants a user
/// what the mode bits refuse, its removal refuses it again, a directory's
/// ACL refuses search, and `getfacl` reads through the mount what the host
/// stores.
fn setfacl_and_getfacl<T: InodeTable>() {
    need("setfacl");
    with_mount::<T>(|m| {
        let mnt = m.mnt.display().to_string();
        file(&m.source, "secret", 0o640, 0);
        fs::create_dir(m.host("d")).unwrap();
        file(&m.host("d"), "f", 0o644, 0);
        let nobody_reads = |p: &str| sh_as_nobody(&format!("cat {mnt}/{p}")).status.success();
        assert!(!nobody_reads("secret"));
        sh(&format!("setfacl -m u:65534:r {mnt}/secret"));
        assert!(nobody_reads("secret"), "the ACL entry grants reading");
        assert_eq!(acl_of(&m.at("secret")), acl_of(&m.host("secret")));
        assert!(acl_of(&m.host("secret")).contains("user:nobody:r--"));
        sh(&format!("setfacl -x u:65534 {mnt}/secret"));
        assert!(!nobody_reads("secret"), "the entry's removal refuses again");
        assert!(nobody_reads("d/f"));
        sh(&format!("setfacl -m u:65534:--- {mnt}/d"));
        assert!(!nobody_reads("d/f"), "the directory's ACL refuses search");
        sh(&format!("setfacl -b {mnt}/d {mnt}/secret"));
        assert!(nobody_reads("d/f"));
        assert_eq!(acl_of(&m.host("d")), acl_of(&m.at("d")));
    });
}

/// The attack (issue 23, finding 4): a directory of mode 0755 whose ACL
/// denies user 65534 (set on the host). The host refuses the user; so must
/// the mount, every try, while another user (uid 1000) keeps the path
/// cached in the kernel. Before `FUSE_POSIX_ACL`, the kernel checked only
/// the mode bits on a cached path, and the denied user read the file in
/// most tries.
fn a_directory_acl_holds_on_a_cached_path<T: InodeTable>() {
    need("setfacl");
    with_mount::<T>(|m| {
        fs::create_dir(m.host("d")).unwrap();
        file(&m.host("d"), "f", 0o644, 0);
        sh(&format!(
            "setfacl -m u:65534:--- '{}'",
            m.host("d").display()
        ));
        let host_refuses = sh_as_nobody(&format!("cat '{}'", m.host("d/f").display()));
        assert!(!host_refuses.status.success(), "the host refuses the user");
        let target = m.at("d/f").display().to_string();
        let stop = m.mnt.join(".stop");
        let keeper = as_user(1000, "sh")
            .arg("-c")
            .arg(format!(
                "n=0; while [ ! -e '{}' ]; do cat '{target}' > /dev/null && n=$((n+1)); done; echo $n",
                stop.display()
            ))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let tries = 2000;
        let denied = as_user(65534, PYTHON)
            .arg("-c")
            .arg(format!(
                "import sys\nok = 0\nfor _ in range({tries}):\n    try:\n        open(sys.argv[1]).read(); ok += 1\n    except OSError: pass\nprint(ok)"
            ))
            .arg(&target)
            .output()
            .unwrap();
        fs::write(&stop, "").unwrap();
        let kept = keeper.wait_with_output().unwrap();
        let read: u32 = String::from_utf8_lossy(&denied.stdout)
            .trim()
            .parse()
            .unwrap();
        let cached: u32 = String::from_utf8_lossy(&kept.stdout)
            .trim()
            .parse()
            .unwrap();
        eprintln!(
            "{}: the denied user read the file in {read} of {tries} tries; the other user's reads: {cached}",
            T::NAME
        );
        assert_eq!(read, 0, "the denied user read the file through the mount");
        assert!(cached > 0, "the other user kept the path cached");
        fs::remove_file(&stop).unwrap();
    });
}

/// `cp -a`, `tar --xattrs --acls` and `rsync -aAX` keep extended
/// attributes and ACLs, into and out of the mount.
fn copies_keep_xattrs_and_acls<T: InodeTable>() {
    need("setfacl");
    need("getfattr");
    need("rsync");
    with_mount::<T>(|m| {
        let (mnt, src) = (m.mnt.display(), m.source.display());
        fs::create_dir(m.host("orig")).unwrap();
        file(&m.host("orig"), "f", 0o640, 0);
        sh(&format!(
            "setfattr -n user.colour -v blue {mnt}/orig/f && setfacl -m u:65534:r,g:65534:rw {mnt}/orig/f && setfacl -d -m u:65534:rx {mnt}/orig"
        ));
        let want = all_xattrs(&m.host("orig/f"));
        assert!(want.contains("user.colour=\"blue\""), "{want}");
        assert!(want.contains("system.posix_acl_access"), "{want}");
        sh(&format!("cp -a {mnt}/orig {mnt}/cp"));
        assert_eq!(all_xattrs(&m.host("cp/f")), want, "cp -a");
        assert_eq!(
            all_xattrs(&m.host("cp")),
            all_xattrs(&m.host("orig")),
            "cp -a (dir)"
        );
        let tar = tempfile::tempdir().unwrap();
        let archive = tar.path().join("a.tar");
        let archive = archive.display();
        sh(&format!(
            "tar --xattrs --xattrs-include='*' --acls -cf {archive} -C {mnt} orig && mkdir {mnt}/untar && tar --xattrs --xattrs-include='*' --acls -xf {archive} -C {mnt}/untar"
        ));
        assert_eq!(all_xattrs(&m.host("untar/orig/f")), want, "tar");
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().display();
        sh(&format!(
            "rsync -aAX {mnt}/orig/ {out}/r && rsync -aAX {out}/r/ {mnt}/rs"
        ));
        assert_eq!(all_xattrs(&outside.path().join("r/f")), want, "rsync out");
        assert_eq!(all_xattrs(&m.host("rs/f")), want, "rsync back in");
        sh(&format!("rm -r {src}/orig {src}/cp {src}/untar"));
        let _ = fs::remove_dir_all(m.host("rs"));
        let _ = fs::set_permissions(m.host(""), fs::Permissions::from_mode(0o755));
    });
}

on_both_tables!(
    xattr_calls_as_root,
    xattr_calls_as_a_user,
    the_umask_and_default_acls,
    setfacl_and_getfacl,
    a_directory_acl_holds_on_a_cached_path,
    copies_keep_xattrs_and_acls,
);
