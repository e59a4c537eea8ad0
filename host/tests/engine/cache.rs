//! The compiled-artifact cache: a second load comes from it, and a damaged artifact or one
//! without its MAC is recompiled rather than trusted.

use pipewarden::engine::{CodeSource, Policy, PolicyOptions};
use pipewarden_test_support::built_policy;

fn cache_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "pipewarden-cache-test-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_second_load_comes_from_the_cache() {
    let dir = cache_dir("reuse");
    let options = PolicyOptions {
        cache_dir: Some(dir.clone()),
        ..PolicyOptions::default()
    };
    let first = Policy::load(&built_policy("kfp-default"), options.clone()).unwrap();
    assert_eq!(first.load_report().source, CodeSource::Compiled);
    let second = Policy::load(&built_policy("kfp-default"), options).unwrap();
    assert_eq!(second.load_report().source, CodeSource::Cached);
    eprintln!(
        "compile {:?}, cached load {:?}",
        first.load_report().code_time,
        second.load_report().code_time
    );
    second
        .validate_settings(&pipewarden_test_support::read(
            "policies/kfp-default/settings/kfp-2.17.0.json",
        ))
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_artifact_is_recompiled() {
    let dir = cache_dir("damaged");
    let options = PolicyOptions {
        cache_dir: Some(dir.clone()),
        ..PolicyOptions::default()
    };
    Policy::load(&built_policy("kfp-default"), options.clone()).unwrap();
    let artifact = std::fs::read_dir(dir.join("compiled"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("an artifact was written");
    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, bytes).unwrap();

    let reloaded = Policy::load(&built_policy("kfp-default"), options.clone()).unwrap();
    assert_eq!(reloaded.load_report().source, CodeSource::Compiled);
    // The rewrite repaired the cache.
    let third = Policy::load(&built_policy("kfp-default"), options).unwrap();
    assert_eq!(third.load_report().source, CodeSource::Cached);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_artifact_without_its_mac_is_recompiled() {
    // So is one cached by a version that recorded a checksum instead.
    let dir = cache_dir("unchecked");
    let options = PolicyOptions {
        cache_dir: Some(dir.clone()),
        ..PolicyOptions::default()
    };
    Policy::load(&built_policy("kfp-default"), options.clone()).unwrap();
    let checksums: Vec<_> = std::fs::read_dir(dir.join("compiled"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mac"))
        .collect();
    assert_eq!(checksums.len(), 1, "one MAC beside the artifact");
    std::fs::remove_file(&checksums[0]).unwrap();

    let reloaded = Policy::load(&built_policy("kfp-default"), options.clone()).unwrap();
    assert_eq!(reloaded.load_report().source, CodeSource::Compiled);
    let third = Policy::load(&built_policy("kfp-default"), options).unwrap();
    assert_eq!(third.load_report().source, CodeSource::Cached);
    let _ = std::fs::remove_dir_all(&dir);
}
