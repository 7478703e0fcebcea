//! The dentry tree without loom: what its models race, one step at a time.

use lockref_loom_downstream::dentry_tree::TreeError;
use lockref_loom_downstream::DentryTree;

#[test]
fn a_second_lookup_is_a_hit_and_a_create_turns_a_negative_entry_positive() {
    let tree = DentryTree::new(4, 8);
    let root = tree.root();
    let before = DentryTree::store_lookups_here();
    assert_eq!(tree.lookup(&root, "f").unwrap().ino, None);
    assert_eq!(tree.lookup(&root, "f").unwrap().ino, None);
    assert_eq!(
        DentryTree::store_lookups_here(),
        before + 1,
        "the second lookup hits"
    );
    tree.create(&root, "f").unwrap();
    assert_eq!(tree.create(&root, "f"), Err(TreeError::Exists));
    let f = tree.lookup(&root, "f").unwrap();
    assert!(f.ino.is_some(), "the negative entry went with the create");
    assert_eq!(DentryTree::store_lookups_here(), before + 2);
    tree.unlink(&root, "f").unwrap();
    assert_eq!(tree.unlink(&root, "f"), Err(TreeError::NotFound));
    assert!(!f.is_findable());
    assert_eq!(tree.lookup(&root, "f").unwrap().ino, None);
}

#[test]
fn a_renamed_directory_is_found_by_its_new_name_and_its_old_entry_is_stale() {
    let tree = DentryTree::new(4, 8);
    let root = tree.root();
    tree.create(&root, "d").unwrap();
    let d = tree.lookup(&root, "d").unwrap();
    tree.create(&d, "x").unwrap();
    let x = tree.lookup(&d, "x").unwrap();
    tree.rename(&root, "d", "e").unwrap();
    assert_eq!(tree.lookup(&d, "x").err(), Some(TreeError::Stale));
    assert_eq!(tree.create(&d, "y"), Err(TreeError::Stale));
    let e = tree.lookup(&root, "e").unwrap();
    assert_eq!(e.ino, d.ino);
    assert_eq!(
        tree.lookup(&e, "x").unwrap().ino,
        x.ino,
        "its children are found below its new entry"
    );
    assert_eq!(tree.lookup(&root, "d").unwrap().ino, None);
    assert_eq!(tree.rename(&root, "d", "f"), Err(TreeError::NotFound));
    assert!(!tree.is_empty());
}
