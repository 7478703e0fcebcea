//! Path walks that answer as Linux does: where `.`, `..`, a trailing
//! slash, `O_CREAT` and a name's length are judged, with the counts checked
//! balanced after each refused call.

use lockref_dcache::*;

mod common;
use common::*;

/// `.` and `..` need a directory before them, a trailing slash needs a
/// directory at the end, and `O_CREAT` neither opens a directory nor
/// creates from a contradiction: the answers Linux gives, in both walks,
/// and nothing changed by a refused call.
#[test]
fn dots_trailing_slashes_and_creat_follow_linux() {
    for revalidate in [false, true] {
        for variants in [Variants::AFTER, Variants::BEFORE] {
            let c = Dcache::new(Config {
                buckets: 64,
                revalidate,
                variants,
                ..Config::default()
            });
            touch(&c, "/file");
            c.mkdir("/dir").unwrap();
            let cases: [(&str, Result<(), Errno>); 9] = [
                ("/file/..", Err(Errno::NotDir)),
                ("/file/.", Err(Errno::NotDir)),
                ("/missing/..", Err(Errno::NoEnt)),
                ("/missing/.", Err(Errno::NoEnt)),
                ("/file/", Err(Errno::NotDir)),
                ("/dir/", Ok(())),
                ("/dir/..", Ok(())),
                ("/dir/../file", Ok(())),
                ("/dir/./", Ok(())),
            ];
            for (path, want) in cases {
                assert_eq!(c.stat(path).map(drop), want, "stat({path:?})");
                let opened = c.open(path, OpenFlags::RDONLY).map(|f| c.close(f));
                assert_eq!(opened, want, "open({path:?})");
            }
            assert_eq!(c.mkdir("/missing/../x"), Err(Errno::NoEnt));
            assert_eq!(c.stat("/x"), Err(Errno::NoEnt));
            assert_eq!(c.unlink("/file/"), Err(Errno::NotDir));
            assert!(c.stat("/file").is_ok(), "a refused unlink removes nothing");
            let creat = |path: &str, flags: OpenFlags| c.open(path, flags).map(|f| c.close(f));
            assert_eq!(creat("/dir", OpenFlags::RDONLY.creat()), Err(Errno::IsDir));
            assert_eq!(creat("/dir", OpenFlags::WRONLY.creat()), Err(Errno::IsDir));
            assert_eq!(
                creat("/dir", OpenFlags::WRONLY.creat().excl()),
                Err(Errno::Exist)
            );
            assert_eq!(creat("/new/", OpenFlags::WRONLY.creat()), Err(Errno::IsDir));
            assert_eq!(
                creat("/file/", OpenFlags::WRONLY.creat()),
                Err(Errno::IsDir)
            );
            assert_eq!(
                creat("/new", OpenFlags::RDONLY.creat().directory()),
                Err(Errno::Inval)
            );
            assert_eq!(c.stat("/new"), Err(Errno::NoEnt), "nothing created");
            balanced(&c);
        }
    }
}

/// Linux walks a path's components in order and judges the last one (a
/// dot, a trailing slash, a name too long) only once its parent is walked:
/// each answer below was read off Linux 6.18 on ext4 (`/f` a file, `/d` a
/// directory, `/missing` absent). Before, the last component and every
/// name's length were judged before the walk.
#[test]
fn the_walk_judges_each_component_where_linux_does() {
    let long = "x".repeat(NAME_MAX + 1);
    for revalidate in [false, true] {
        for variants in [Variants::AFTER, Variants::BEFORE] {
            let c = Dcache::new(Config {
                buckets: 64,
                revalidate,
                variants,
                ..Config::default()
            });
            touch(&c, "/f");
            c.mkdir("/d").unwrap();
            let creat = |path: &str, flags: OpenFlags| c.open(path, flags).map(|f| c.close(f));
            for flags in [
                OpenFlags::WRONLY.creat(),
                OpenFlags::RDONLY.creat(),
                OpenFlags::WRONLY.creat().excl(),
            ] {
                assert_eq!(
                    creat("/f/", flags),
                    Err(Errno::IsDir),
                    "open(/f/, {flags:?})"
                );
            }
            let open_cases = [
                ("/f/.", Errno::NotDir),
                ("/d/.", Errno::IsDir),
                ("/missing/x/", Errno::NoEnt),
                ("/f/x/", Errno::NotDir),
                ("/", Errno::IsDir),
            ];
            for (path, want) in open_cases {
                assert_eq!(
                    creat(path, OpenFlags::RDONLY.creat()),
                    Err(want),
                    "open({path:?}, O_CREAT)"
                );
            }
            let d_long = format!("/d/{long}");
            let creat_long = creat(&d_long, OpenFlags::WRONLY.creat());
            assert_eq!(creat_long, Err(Errno::NameTooLong));
            let trailing = creat(&format!("{d_long}/"), OpenFlags::WRONLY.creat());
            assert_eq!(trailing, Err(Errno::IsDir), "the trailing slash first");
            let mkdir_cases = [
                ("/f/.".to_string(), Errno::NotDir),
                ("/d/.".to_string(), Errno::Exist),
                ("/missing/..".to_string(), Errno::NoEnt),
                ("/".to_string(), Errno::Exist),
                (d_long.clone(), Errno::NameTooLong),
                (format!("/f/{long}"), Errno::NotDir),
            ];
            for (path, want) in mkdir_cases {
                assert_eq!(c.mkdir(&path), Err(want), "mkdir({path:?})");
            }
            let unlink_cases = [
                ("/f/.".to_string(), Errno::NotDir),
                ("/f/..".to_string(), Errno::NotDir),
                ("/d/.".to_string(), Errno::IsDir),
                ("/d/..".to_string(), Errno::IsDir),
                ("/missing/..".to_string(), Errno::NoEnt),
                ("/".to_string(), Errno::IsDir),
                (d_long.clone(), Errno::NameTooLong),
                (format!("{d_long}/"), Errno::NameTooLong),
            ];
            for (path, want) in unlink_cases {
                assert_eq!(c.unlink(&path), Err(want), "unlink({path:?})");
            }
            let stat_cases = [
                (format!("/f/{long}"), Errno::NotDir),
                (format!("/missing/{long}"), Errno::NoEnt),
                (format!("/{long}"), Errno::NameTooLong),
                (format!("/{long}/x"), Errno::NameTooLong),
            ];
            for (path, want) in stat_cases {
                assert_eq!(c.stat(&path).map(drop), Err(want), "stat({path:?})");
                let opened = c.open(&path, OpenFlags::RDONLY).map(|f| c.close(f));
                assert_eq!(opened, Err(want), "open({path:?})");
            }
            assert!(c.mkdir("/d/new/").is_ok(), "mkdir accepts a trailing slash");
            assert!(
                c.stat("/f").is_ok() && c.stat("/d").is_ok(),
                "nothing removed"
            );
            balanced(&c);
        }
    }
}
