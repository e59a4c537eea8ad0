use std::os::unix::fs::PermissionsExt as _;

use super::*;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "pipewarden-artifact-cache-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Two different components: what a swap would put under the other's name.
fn components(engine: &Engine) -> (Component, Component) {
    let one = wat::parse_str("(component (core module (func (export \"one\"))))").unwrap();
    let two = wat::parse_str("(component (core module (func (export \"two\"))))").unwrap();
    (
        Component::new(engine, one).unwrap(),
        Component::new(engine, two).unwrap(),
    )
}

const A: &str = "sha256:aaaa";
const B: &str = "sha256:bbbb";

#[test]
fn an_artifact_copied_under_another_policys_name_is_a_miss() {
    let engine = Engine::default();
    let dir = dir("swap");
    let cache = ArtifactCache::new(&dir);
    let (one, two) = components(&engine);
    cache.store(&engine, A, &one);
    cache.store(&engine, B, &two);
    assert!(cache.load(&engine, A).is_some(), "A as stored");

    // A's artifact and MAC under B's name: B's policy would run A's code.
    let (a, b) = (
        cache.artifact_path(&engine, A),
        cache.artifact_path(&engine, B),
    );
    std::fs::copy(&a, &b).unwrap();
    std::fs::copy(mac_path(&a), mac_path(&b)).unwrap();
    assert!(
        cache.load(&engine, B).is_none(),
        "swapped in: compiled again"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_artifact_written_without_the_key_or_damaged_is_a_miss() {
    let engine = Engine::default();
    let dir = dir("forged");
    let cache = ArtifactCache::new(&dir);
    let (one, two) = components(&engine);
    cache.store(&engine, A, &one);
    let path = cache.artifact_path(&engine, A);

    // Someone who can write the directory but not read the key.
    let other_key = hmac::Key::new(hmac::HMAC_SHA256, &[7; KEY_BYTES]);
    let forged = two.serialize().unwrap();
    let tag = sign(&other_key, &mac_input(&engine, A), &forged);
    std::fs::write(&path, &forged).unwrap();
    std::fs::write(mac_path(&path), hex::encode(tag)).unwrap();
    assert!(cache.load(&engine, A).is_none(), "forged");

    cache.store(&engine, A, &one);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    assert!(cache.load(&engine, A).is_none(), "damaged");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The shipped volume: an emptyDir is root's and 0777. The cache makes its own 0700
/// subdirectory inside it and is used (before, the volume itself was checked and the cache
/// was off in every shipped pod).
#[test]
fn a_volume_others_may_write_holds_a_private_subdirectory_that_is_used() {
    let engine = Engine::default();
    let dir = dir("emptydir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let cache = ArtifactCache::new(&dir);
    let (one, _) = components(&engine);
    cache.store(&engine, A, &one);
    assert!(cache.load(&engine, A).is_some(), "used");
    let private = std::fs::metadata(dir.join(SUBDIR)).unwrap();
    assert_eq!(private.mode() & 0o777, 0o700);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_cache_subdirectory_others_may_write_is_not_used() {
    let engine = Engine::default();
    let dir = dir("shared");
    std::fs::create_dir_all(dir.join(SUBDIR)).unwrap();
    std::fs::set_permissions(dir.join(SUBDIR), std::fs::Permissions::from_mode(0o777)).unwrap();
    let cache = ArtifactCache::new(&dir);
    let (one, _) = components(&engine);
    cache.store(&engine, A, &one);
    assert!(!cache.artifact_path(&engine, A).exists(), "nothing stored");
    assert!(cache.load(&engine, A).is_none());
    let error = open_key(&dir.join(SUBDIR))
        .expect_err("refused")
        .to_string();
    assert!(error.contains("others may change it"), "{error}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_key_is_the_process_users_alone() {
    let dir = dir("key");
    ArtifactCache::new(&dir);
    let private = dir.join(SUBDIR);
    let key = std::fs::metadata(private.join(KEY_FILE)).unwrap();
    assert_eq!(key.mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&private).unwrap().mode() & 0o777, 0o700);
    // A key others can read is refused.
    std::fs::set_permissions(
        private.join(KEY_FILE),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    assert!(open_key(&private).is_err());
    std::fs::remove_dir_all(dir).unwrap();
}

/// Threads opening a fresh cache at once all read a whole key (one of them wrote it).
#[test]
fn a_cache_opened_at_once_by_many_finds_a_whole_key() {
    for round in 0..20 {
        let dir = dir(&format!("race-{round}"));
        let opened: Vec<_> = std::thread::scope(|scope| {
            let opening: Vec<_> = (0..8).map(|_| scope.spawn(|| open_key(&dir))).collect();
            opening.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for key in opened {
            key.expect("a whole key");
        }
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "the key alone, no temporary file left");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// Policies loaded one after another leave only the newest two artifacts on the volume.
#[test]
fn only_the_newest_artifacts_are_kept() {
    let engine = Engine::default();
    let dir = dir("cleanup");
    let cache = ArtifactCache::new(&dir);
    let (one, two) = components(&engine);
    for (digest, component) in [
        ("sha256:01", &one),
        ("sha256:02", &two),
        ("sha256:03", &one),
    ] {
        cache.store(&engine, digest, component);
        // Distinct modification times, newest last.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kept: Vec<String> = std::fs::read_dir(dir.join(SUBDIR))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".cwasm") || name.ends_with(".mac"))
        .collect();
    assert_eq!(kept.len(), 2 * KEEP, "{kept:?}");
    assert!(!cache.artifact_path(&engine, "sha256:01").exists());
    assert!(cache.load(&engine, "sha256:03").is_some());
    std::fs::remove_dir_all(dir).unwrap();
}
