use super::*;

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

fn spec(name: &str, value: Option<&str>, default: Option<&str>, style: FlagStyle) -> FlagSpec {
    FlagSpec {
        name: name.into(),
        value: value.map(Into::into),
        default: default.map(Into::into),
        style,
    }
}

fn set(name: &str, value: &str) -> FlagSpec {
    spec(name, Some(value), None, FlagStyle::Separate)
}

#[test]
fn parse_and_write_round_trip() {
    let args = strings(&[
        "--type",
        "CONTAINER",
        "--empty",
        "",
        "--cache_disabled=false",
        "--bare",
        "--last",
        "positional",
        "--",
        "--not-a-flag",
    ]);
    assert_eq!(write(parse(&args)), args);
}

#[test]
fn parse_reads_each_form() {
    let tokens = parse(&strings(&["--a", "1", "--b=2", "--c", "--d", "", "x"]));
    let flag = |name: &str, value: Option<&str>, style| Token::Flag {
        name: name.into(),
        value: value.map(Into::into),
        style,
    };
    assert_eq!(
        tokens,
        [
            flag("a", Some("1"), FlagStyle::Separate),
            flag("b", Some("2"), FlagStyle::Equals),
            flag("c", None, FlagStyle::Separate),
            flag("d", Some(""), FlagStyle::Separate),
            Token::Other("x".into()),
        ]
    );
}

#[test]
fn flag_value_finds_the_first_occurrence() {
    let args = strings(&["--type", "CONTAINER", "--x=1", "--type", "DAG", "--bare"]);
    assert_eq!(flag_value(&args, "type").as_deref(), Some("CONTAINER"));
    assert_eq!(flag_value(&args, "x").as_deref(), Some("1"));
    assert_eq!(flag_value(&args, "bare"), None);
    assert_eq!(flag_value(&args, "missing"), None);
}

#[test]
fn updates_changed_values_in_place() {
    let args = strings(&["--log_level", "0", "--other", "keep"]);
    let out = apply_flags(&args, &[&set("log_level", "1")]).unwrap();
    assert_eq!(out, strings(&["--log_level", "1", "--other", "keep"]));
}

#[test]
fn inserts_missing_flags_after_the_previous_spec() {
    let args = strings(&["--a", "1", "--c", "3", "--z", "26"]);
    let specs = [set("a", "1"), set("b", "2"), set("c", "3"), set("d", "4")];
    let refs: Vec<&FlagSpec> = specs.iter().collect();
    let out = apply_flags(&args, &refs).unwrap();
    assert_eq!(
        out,
        strings(&["--a", "1", "--b", "2", "--c", "3", "--d", "4", "--z", "26"])
    );
}

#[test]
fn missing_first_flag_goes_first() {
    let out = apply_flags(&strings(&["--b", "2"]), &[&set("a", "1")]).unwrap();
    assert_eq!(out, strings(&["--a", "1", "--b", "2"]));
}

#[test]
fn style_is_converted() {
    let equals = spec("cache_disabled", Some("false"), None, FlagStyle::Equals);
    let out = apply_flags(&strings(&["--cache_disabled", "true"]), &[&equals]).unwrap();
    assert_eq!(out, strings(&["--cache_disabled=false"]));
    let back = apply_flags(&out, &[&set("cache_disabled", "false")]).unwrap();
    assert_eq!(back, strings(&["--cache_disabled", "false"]));
}

#[test]
fn default_only_fills_a_missing_flag() {
    let display = spec("run_display_name", None, Some(""), FlagStyle::Separate);
    let kept = apply_flags(&strings(&["--run_display_name", "nightly"]), &[&display]).unwrap();
    assert_eq!(kept, strings(&["--run_display_name", "nightly"]));
    let added = apply_flags(&[], &[&display]).unwrap();
    assert_eq!(added, strings(&["--run_display_name", ""]));
}

#[test]
fn per_pipeline_flag_is_kept_and_required() {
    let name = spec("pipeline_name", None, None, FlagStyle::Separate);
    let kept = apply_flags(&strings(&["--pipeline_name", "echo"]), &[&name]).unwrap();
    assert_eq!(kept, strings(&["--pipeline_name", "echo"]));
    let error = apply_flags(&strings(&["--type", "DAG"]), &[&name]).unwrap_err();
    assert!(error.contains("--pipeline_name"), "{error}");
}

#[test]
fn every_occurrence_of_a_repeated_flag_is_updated() {
    let args = strings(&["--x", "1", "--x=2"]);
    let out = apply_flags(&args, &[&set("x", "9")]).unwrap();
    assert_eq!(out, strings(&["--x", "9", "--x", "9"]));
}

#[test]
fn bare_flag_stays_bare_without_a_value() {
    let keep = spec("verbose", None, None, FlagStyle::Equals);
    let out = apply_flags(&strings(&["--verbose"]), &[&keep]).unwrap();
    assert_eq!(out, strings(&["--verbose"]));
}

#[test]
fn applying_twice_changes_nothing() {
    let args = strings(&["--type", "CONTAINER", "--cache_disabled", "true", "--zz"]);
    let specs = [
        spec("type", None, None, FlagStyle::Separate),
        set("run_id", "{{workflow.uid}}"),
        spec("cache_disabled", Some("false"), None, FlagStyle::Equals),
        spec("extra", None, Some(""), FlagStyle::Separate),
    ];
    let refs: Vec<&FlagSpec> = specs.iter().collect();
    let once = apply_flags(&args, &refs).unwrap();
    assert_eq!(apply_flags(&once, &refs).unwrap(), once);
}
