//! A guest is bounded as a whole, not per memory: many memories in one component, memories that
//! each fit but not together, and `wasi:random` asked for 64 MiB at once by 16 guests. Each
//! fails on its own with its own error, and the process's peak RSS stays far below the pod's
//! 512 MiB limit (printed).

use std::sync::Arc;

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

use super::options::PolicyOptions;
use super::store::{MAX_RANDOM_BYTES, StoreState};

const MIB: usize = 1 << 20;

fn engine() -> Engine {
    super::new_engine(&PolicyOptions::default()).expect("engine")
}

fn store(engine: &Engine) -> Store<StoreState> {
    let limit = PolicyOptions::default().memory_limit;
    let mut store = Store::new(engine, StoreState::new("bounds".into(), "{}".into(), limit));
    store.limiter(|state| &mut state.memory);
    store.set_epoch_deadline(1 << 40);
    store
}

/// Loads and instantiates a component of `count` core instances, each with a memory of `mib`
/// MiB it writes to every page of on start (so the pages are really resident).
fn memories(engine: &Engine, count: usize, mib: usize) -> Result<(), String> {
    let pages = mib * 16;
    let bytes = mib * MIB;
    let module = format!(
        r#"(core module $m
             (memory {pages})
             (func $touch (local $at i32)
               (loop $page
                 (i32.store8 (local.get $at) (i32.const 1))
                 (local.set $at (i32.add (local.get $at) (i32.const 65536)))
                 (br_if $page (i32.lt_u (local.get $at) (i32.const {bytes})))))
             (start $touch))"#
    );
    let instances = "(core instance (instantiate $m))\n".repeat(count);
    let text = format!("(component {module} {instances})");
    // The pooling allocator checks a component's memories when it is compiled: a policy
    // with too many is refused at load, before any decision.
    let component = Component::new(engine, wat::parse_str(&text).expect("wat"))
        .map_err(|error| format!("{error:#}"))?;
    let mut store = store(engine);
    Linker::<StoreState>::new(engine)
        .instantiate(&mut store, &component)
        .map(|_| ())
        .map_err(|error| format!("{error:#}"))
}

#[test]
fn sixteen_memories_in_one_guest_are_refused_and_four_that_do_not_fit_together_too() {
    let engine = engine();
    assert_eq!(memories(&engine, 1, 32), Ok(()), "one 32 MiB memory fits");
    assert_eq!(memories(&engine, 2, 32), Ok(()), "two fit together");
    let sixteen = memories(&engine, 16, 64).expect_err("16 x 64 MiB");
    assert!(sixteen.contains("linear memories"), "{sixteen}");
    let together = memories(&engine, 3, 32).expect_err("3 x 32 MiB under a 64 MiB cap");
    assert!(together.contains("memory"), "{together}");
    println!("16 x 64 MiB: {sixteen}\n3 x 32 MiB: {together}");
}

/// A component exporting `run(len)`, which asks `wasi:random` for `len` bytes.
fn random_component(engine: &Engine) -> Component {
    let text = r#"(component
      (import "wasi:random/random@0.2.0" (instance $random
        (export "get-random-bytes" (func (param "len" u64) (result (list u8))))))
      (core module $libc
        (memory (export "memory") 1)
        (global $next (mut i32) (i32.const 16))
        (func (export "realloc") (param i32 i32 i32 i32) (result i32)
          (local $at i32)
          (local.set $at (global.get $next))
          (global.set $next (i32.add (global.get $next) (local.get 3)))
          (if (i32.gt_u (global.get $next) (i32.mul (memory.size) (i32.const 65536)))
            (then
              (if (i32.eq (memory.grow (i32.add (i32.shr_u (local.get 3) (i32.const 16))
                                                (i32.const 1)))
                          (i32.const -1))
                (then unreachable))))
          (local.get $at)))
      (core instance $libc (instantiate $libc))
      (core func $get (canon lower (func $random "get-random-bytes")
        (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
      (core module $main
        (import "host" "get" (func $get (param i64 i32)))
        (func (export "run") (param i64) (call $get (local.get 0) (i32.const 0))))
      (core instance $main (instantiate $main (with "host" (instance (export "get" (func $get))))))
      (func (export "run") (param "len" u64) (canon lift (core func $main "run"))))"#;
    Component::new(engine, wat::parse_str(text).expect("wat")).expect("component")
}

fn ask_random(engine: &Engine, component: &Component, len: u64) -> Result<(), String> {
    let mut linker = Linker::<StoreState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("wasi");
    let mut store = store(engine);
    let instance = linker
        .instantiate(&mut store, component)
        .map_err(|error| format!("{error:#}"))?;
    let run = instance
        .get_typed_func::<(u64,), ()>(&mut store, "run")
        .map_err(|error| format!("{error:#}"))?;
    run.call(&mut store, (len,))
        .map_err(|error| format!("{error:#}"))
}

/// Peak resident set of this process since the last reset, in MiB.
fn peak_rss_mib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| {
            kb.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kb| kb / 1024)
}

#[test]
fn sixteen_guests_asking_for_64_mib_of_random_at_once_each_fail_and_rss_stays_bounded() {
    let engine = engine();
    let component = Arc::new(random_component(&engine));
    assert_eq!(
        ask_random(&engine, &component, 32),
        Ok(()),
        "a seed's worth"
    );
    assert_eq!(ask_random(&engine, &component, MAX_RANDOM_BYTES), Ok(()));

    // Resets the peak (VmHWM) to the current RSS, so the peak below is this test's.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = peak_rss_mib();
    let errors: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let asks: Vec<_> = (0..16)
            .map(|_| {
                let (engine, component) = (engine.clone(), component.clone());
                scope.spawn(move || ask_random(&engine, &component, 64 * MIB as u64))
            })
            .collect();
        asks.into_iter()
            .map(|ask| ask.join().expect("thread"))
            .collect()
    });
    let peak = peak_rss_mib();
    println!(
        "16 concurrent 64 MiB random calls: peak RSS {peak} MiB (from {before} MiB; reset: {reset})"
    );
    for error in &errors {
        let error = error.as_ref().expect_err("64 MiB of random");
        assert!(error.contains("exceeds limit"), "{error}");
    }
    if reset {
        assert!(
            peak.saturating_sub(before) < 256,
            "peak RSS grew {} MiB",
            peak - before
        );
    }
}
