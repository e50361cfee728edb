use super::*;

fn env() -> ConfigEnv {
    ConfigEnv::default()
}

fn file(trust: ConfigTrust) -> ConfigFile {
    ConfigFile {
        path: PathBuf::from("/p/.metron.json"),
        trust,
    }
}

fn load_text(text: &str, trust: ConfigTrust, env: &ConfigEnv) -> Result<Loaded, ConfigError> {
    let mut loaded = Loaded::defaults();
    apply_file(&mut loaded, &file(trust), text, env)?;
    apply_env(&mut loaded, env)?;
    validate(&loaded)?;
    Ok(loaded)
}

#[test]
fn example_file_is_exactly_the_defaults() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/metron.example.json"))
        .expect("metron.example.json at the crate root");
    let loaded = load_text(&text, ConfigTrust::User, &env()).expect("example parses");
    assert_eq!(loaded.config, Config::default());
    let value: Value = serde_json::from_str(&text).expect("json");
    let listed: Vec<&str> = value
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    for key in KEYS {
        assert!(listed.contains(key), "metron.example.json lacks `{key}`");
    }
    assert_eq!(
        text,
        example_json(),
        "regenerate metron.example.json from config::example_json()"
    );
}

#[test]
fn file_values_and_sources() {
    let loaded = load_text(
        r#"{"model":"m","max_turns":3,"top_p":1}"#,
        ConfigTrust::User,
        &env(),
    )
    .expect("loads");
    assert_eq!(loaded.config.model, "m");
    assert_eq!(loaded.config.max_turns, 3);
    assert_eq!(
        loaded.source_of("model"),
        &Source::File(PathBuf::from("/p/.metron.json"))
    );
    assert_eq!(loaded.source_of("num_ctx"), &Source::Default);
}

#[test]
fn env_overrides_file() {
    let env = ConfigEnv {
        ollama_host: Some("gpu-box:9000".into()),
        ollama_model: Some("small".into()),
        ..ConfigEnv::default()
    };
    let loaded = load_text(r#"{"model":"big"}"#, ConfigTrust::User, &env).expect("loads");
    assert_eq!(loaded.config.model, "small");
    assert_eq!(loaded.config.endpoint, "http://gpu-box:9000/api/chat");
    assert_eq!(loaded.source_of("endpoint"), &Source::Env("OLLAMA_HOST"));
}

#[test]
fn the_model_flag_overrides_the_environment_and_the_file() {
    let env = ConfigEnv {
        ollama_model: Some("small".into()),
        ..ConfigEnv::default()
    };
    let mut loaded = load_text(r#"{"model":"big"}"#, ConfigTrust::User, &env).expect("loads");
    let flags = Flags {
        model: Some("chosen:7b".into()),
        ..Flags::default()
    };
    apply_flags(&mut loaded, &flags).expect("a model name");
    validate(&loaded).expect("valid");
    assert_eq!(loaded.config.model, "chosen:7b");
    assert_eq!(loaded.source_of("model"), &Source::Flag("--model"));
    assert_eq!(loaded.source_of("model").to_string(), "--model");

    // An empty name is refused, naming the flag as the layer it came from.
    let mut loaded = load_text("{}", ConfigTrust::User, &ConfigEnv::default()).expect("loads");
    apply_flags(
        &mut loaded,
        &Flags {
            model: Some(" ".into()),
            ..Flags::default()
        },
    )
    .expect("a string");
    let err = validate(&loaded)
        .map(|()| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        err.contains("`model` from --model must name a model"),
        "{err}"
    );
}

#[test]
fn unknown_key_suggests_the_closest() {
    let err = load_text(r#"{"modle":"x"}"#, ConfigTrust::User, &env())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`modle`")
            && err.contains("did you mean `model`")
            && err.contains(".metron.json"),
        "{err}"
    );
    let err = load_text(r#"{"search_max_per_fil":1}"#, ConfigTrust::User, &env())
        .unwrap_err()
        .to_string();
    assert!(err.contains("search_max_per_file"), "{err}");
    let err = load_text(r#"{"zzzzzzzz":1}"#, ConfigTrust::User, &env())
        .unwrap_err()
        .to_string();
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn invalid_values_are_named() {
    let cases = [
        (r#"{"top_p":0}"#, "top_p"),
        (r#"{"top_p":1.5}"#, "top_p"),
        (r#"{"max_turns":0}"#, "max_turns"),
        (r#"{"max_slice_lines":-4}"#, "max_slice_lines"),
        (r#"{"list_max_entries":"10"}"#, "list_max_entries"),
        (r#"{"stream":"yes"}"#, "stream"),
        (r#"{"endpoint":"ftp://x"}"#, "endpoint"),
        (r#"{"temperature":-1}"#, "temperature"),
        ("[1,2]", "JSON object"),
        ("{", "not valid JSON"),
    ];
    for (text, needle) in cases {
        let err = load_text(text, ConfigTrust::User, &env())
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{text}: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
}

#[test]
fn disabled_tools_must_name_tools() {
    let names = ["view_slice", "run_command"];
    let mut loaded = load_text(r#"{"disabled_tools":["grep"]}"#, ConfigTrust::User, &env())
        .unwrap_or_else(|e| panic!("{e}"));
    let err = check_tool_names(&mut loaded, &names)
        .map(|()| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(err.contains("disabled_tools"), "{err}");
    assert!(err.contains("`grep`, which is not a tool"), "{err}");
    assert!(err.contains("view_slice, run_command"), "{err}");
    let mut fine = load_text(
        r#"{"disabled_tools":["run_command"]}"#,
        ConfigTrust::User,
        &env(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(check_tool_names(&mut fine, &names).is_ok());
}

/// The list is the user's plus the project's; a bad name is blamed on the file that
/// holds it, whichever layer sets the key last.
#[test]
fn a_bad_disabled_tool_is_blamed_on_its_own_file() {
    let names = ["view_slice", "run_command", "search_text"];
    let mut loaded = load_both(
        r#"{"disabled_tools":["search_text"]}"#,
        r#"{"disabled_tools":["run_comand"]}"#,
        |_| {},
    );
    let err = check_tool_names(&mut loaded, &names)
        .map(|()| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(err.contains("`run_comand`"), "{err}");
    assert!(
        !err.contains(".metron.json"),
        "blamed on the project's file: {err}"
    );
}

#[test]
fn project_file_cannot_grant_authority() {
    let text = r#"{"auto_approve_patches":true,"allowed_commands":["go test"],"model":"m"}"#;
    let loaded = load_text(text, ConfigTrust::Project, &env()).expect("loads");
    assert!(!loaded.config.auto_approve_patches);
    assert!(loaded.config.allowed_commands.is_empty());
    assert_eq!(loaded.config.model, "m");
    assert_eq!(loaded.warnings.len(), 2);

    for yes in ["1", "true", "YES"] {
        let env = ConfigEnv {
            allow_project_commands: Some(yes.into()),
            ..ConfigEnv::default()
        };
        let loaded = load_text(text, ConfigTrust::Project, &env).expect("loads");
        assert_eq!(loaded.config.allowed_commands, vec!["go test".to_owned()]);
        assert!(!loaded.config.auto_approve_patches, "never auto-approval");
        assert_eq!(loaded.warnings.len(), 1);
    }
    let no = ConfigEnv {
        allow_project_commands: Some("0".into()),
        ..ConfigEnv::default()
    };
    assert!(
        load_text(text, ConfigTrust::Project, &no)
            .expect("loads")
            .config
            .allowed_commands
            .is_empty()
    );

    let loaded = load_text(text, ConfigTrust::User, &env()).expect("loads");
    assert!(loaded.config.auto_approve_patches);
    assert!(loaded.warnings.is_empty());
}

#[test]
fn file_search_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".metron")).expect("mkdir");
    std::fs::create_dir_all(&root).expect("mkdir");
    let user = home.join(".metron/config.json");
    std::fs::write(&user, r#"{"model":"user"}"#).expect("write");
    let env = ConfigEnv {
        home: Some(home.clone()),
        ..ConfigEnv::default()
    };
    assert_eq!(
        load(&root, &env, &Flags::default())
            .expect("load")
            .config
            .model,
        "user"
    );

    std::fs::write(root.join(PROJECT_FILE), r#"{"model":"project"}"#).expect("write");
    let loaded = load(&root, &env, &Flags::default()).expect("load");
    assert_eq!(loaded.config.model, "project");
    let trusts: Vec<ConfigTrust> = loaded.files.iter().map(|f| f.trust).collect();
    assert_eq!(
        trusts,
        [ConfigTrust::User, ConfigTrust::Project],
        "both layers, lowest first"
    );

    let explicit = dir.path().join("explicit.json");
    std::fs::write(
        &explicit,
        r#"{"model":"explicit","auto_approve_patches":true}"#,
    )
    .expect("write");
    let env2 = ConfigEnv {
        metron_config: Some(explicit),
        ..env.clone()
    };
    let loaded = load(&root, &env2, &Flags::default()).expect("load");
    // $METRON_CONFIG replaces ~/.metron/config.json as the user's layer; the project's
    // file is still laid on top.
    assert_eq!(loaded.config.model, "project");
    assert_eq!(loaded.files[0].path, dir.path().join("explicit.json"));
    assert!(
        loaded.config.auto_approve_patches,
        "an explicit file is the user's own"
    );
    std::fs::remove_file(root.join(PROJECT_FILE)).expect("remove");
    let loaded = load(&root, &env2, &Flags::default()).expect("load");
    assert_eq!(loaded.config.model, "explicit");

    let env3 = ConfigEnv {
        metron_config: Some(dir.path().join("missing.json")),
        ..env
    };
    assert!(matches!(
        load(&root, &env3, &Flags::default()),
        Err(ConfigError::Read { .. })
    ));
}

#[test]
fn config_dir_beats_home() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base");
    std::fs::create_dir_all(base.join(".metron")).expect("mkdir");
    std::fs::write(base.join(".metron/config.json"), r#"{"model":"from-dir"}"#).expect("write");
    let env = ConfigEnv {
        metron_config_dir: Some(base),
        home: Some(dir.path().join("nohome")),
        ..ConfigEnv::default()
    };
    assert_eq!(
        load(dir.path(), &env, &Flags::default())
            .expect("load")
            .config
            .model,
        "from-dir"
    );
}

#[test]
fn typo_distance() {
    assert_eq!(closest_key("modle"), Some("model"));
    assert_eq!(closest_key("endpiont"), Some("endpoint"));
    assert_eq!(closest_key("max_turn"), Some("max_turns"));
    assert_eq!(closest_key("Model"), Some("model"));
}

#[test]
fn project_file_cannot_send_code_to_a_remote_endpoint() {
    let text = r#"{"endpoint":"https://collector.example.com/api/chat"}"#;
    let loaded = load_text(text, ConfigTrust::Project, &env()).expect("loads");
    assert_eq!(loaded.config.endpoint, Config::default().endpoint);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("endpoint"),
        "{:?}",
        loaded.warnings
    );

    let local = load_text(
        r#"{"endpoint":"localhost:9999"}"#,
        ConfigTrust::Project,
        &env(),
    )
    .expect("loads");
    assert_eq!(local.config.endpoint, "http://localhost:9999/api/chat");
    assert!(local.warnings.is_empty());

    let user = load_text(text, ConfigTrust::User, &env()).expect("loads");
    assert_eq!(
        user.config.endpoint,
        "https://collector.example.com:443/api/chat"
    );
}

#[test]
fn remote_endpoint_is_warn_or_refuse() {
    assert_eq!(Config::default().remote_endpoint, RemoteEndpoint::Warn);
    let loaded =
        load_text(r#"{"remote_endpoint":"refuse"}"#, ConfigTrust::User, &env()).expect("loads");
    assert_eq!(loaded.config.remote_endpoint, RemoteEndpoint::Refuse);
    for bad in [r#""allow""#, r#""Refuse""#, "true", "1"] {
        let text = format!(r#"{{"remote_endpoint":{bad}}}"#);
        let err = load_text(&text, ConfigTrust::User, &env())
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::Invalid {
                    key: "remote_endpoint",
                    ..
                }
            ),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.contains("must be \"warn\" or \"refuse\"") && err.contains(bad),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
    assert_eq!(closest_key("remote_endpiont"), Some("remote_endpoint"));
}

#[test]
fn a_project_file_may_refuse_remote_endpoints_but_not_allow_them() {
    assert!(!Key::remote_endpoint.is_privileged());
    let refuse = load_text(
        r#"{"remote_endpoint":"refuse"}"#,
        ConfigTrust::Project,
        &env(),
    )
    .expect("loads");
    assert_eq!(refuse.config.remote_endpoint, RemoteEndpoint::Refuse);
    assert!(refuse.warnings.is_empty(), "{:?}", refuse.warnings);
    let warn = load_text(
        r#"{"remote_endpoint":"warn"}"#,
        ConfigTrust::Project,
        &env(),
    )
    .expect("loads");
    assert_eq!(warn.config, Config::default(), "`warn` is the default");
}

/// A temporary project root with a `.metron.json`, and a home whose own config says
/// `user_json`.
fn project_and_user(project_json: &str, user_json: &str) -> (tempfile::TempDir, ConfigEnv) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".metron")).expect("mkdir");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(root.join(PROJECT_FILE), project_json).expect("write");
    std::fs::write(home.join(".metron/config.json"), user_json).expect("write");
    let env = ConfigEnv {
        home: Some(home),
        ..ConfigEnv::default()
    };
    (dir, env)
}

#[test]
fn a_project_file_never_lifts_the_users_refusal() {
    let user_refuses = r#"{"remote_endpoint":"refuse","model":"user"}"#;
    for project in [r#"{"remote_endpoint":"warn"}"#, r#"{"max_turns":3}"#] {
        let (dir, env) = project_and_user(project, user_refuses);
        let loaded = load(&dir.path().join("repo"), &env, &Flags::default()).expect("load");
        assert_eq!(loaded.files.len(), 2);
        assert_eq!(
            loaded.config.remote_endpoint,
            RemoteEndpoint::Refuse,
            "{project}"
        );
        assert_eq!(
            loaded.source_of("remote_endpoint"),
            &Source::File(dir.path().join("home/.metron/config.json"))
        );
        // The files are merged: the user's other keys hold too.
        assert_eq!(loaded.config.model, "user");
    }

    // The project's own refusal stands, and is reported as the project's.
    let (dir, env) = project_and_user(r#"{"remote_endpoint":"refuse"}"#, r#"{}"#);
    let loaded = load(&dir.path().join("repo"), &env, &Flags::default()).expect("load");
    assert_eq!(loaded.config.remote_endpoint, RemoteEndpoint::Refuse);
    assert_eq!(
        loaded.source_of("remote_endpoint"),
        &Source::File(dir.path().join("repo").join(PROJECT_FILE))
    );

    // A user's `warn` changes nothing; a broken user file is an error naming it, even
    // with a project file on top (both layers are read).
    let (dir, env) = project_and_user("{}", r#"{"remote_endpoint":"warn"}"#);
    let loaded = load(&dir.path().join("repo"), &env, &Flags::default()).expect("load");
    assert_eq!(loaded.config.remote_endpoint, RemoteEndpoint::Warn);
    for user in ["{not json", r#"{"remote_endpoint":7}"#] {
        let (dir, env) = project_and_user("{}", user);
        let err = load(&dir.path().join("repo"), &env, &Flags::default())
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(err.contains("home/.metron/config.json"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

#[test]
fn the_user_directory_holds_the_config_file_and_follows_the_same_override() {
    let env = ConfigEnv {
        metron_config_dir: Some(PathBuf::from("/base")),
        home: Some(PathBuf::from("/home/me")),
        ..ConfigEnv::default()
    };
    assert_eq!(user_dir(&env), Some(PathBuf::from("/base/.metron")));
    let env = ConfigEnv {
        home: Some(PathBuf::from("/home/me")),
        ..ConfigEnv::default()
    };
    assert_eq!(user_dir(&env), Some(PathBuf::from("/home/me/.metron")));
    assert_eq!(user_dir(&ConfigEnv::default()), None);
}

#[test]
fn session_retention_is_off_by_default_bounded_and_only_the_users_to_set() {
    assert_eq!(Config::default().session_retention_days, 0);
    let on = load_text(
        r#"{"session_retention_days":30}"#,
        ConfigTrust::User,
        &env(),
    )
    .expect("loads");
    assert_eq!(on.config.session_retention_days, 30);
    let at = format!(r#"{{"session_retention_days":{MAX_RETENTION_DAYS}}}"#);
    assert!(load_text(&at, ConfigTrust::User, &env()).is_ok());
    let past = format!(r#"{{"session_retention_days":{}}}"#, MAX_RETENTION_DAYS + 1);
    let err = load_text(&past, ConfigTrust::User, &env())
        .expect_err("over the bound")
        .to_string();
    assert!(err.contains("must be at most 36500 days"), "{err}");
    assert!(Key::session_retention_days.is_privileged());
}

#[test]
fn save_input_history_is_on_unless_a_file_turns_it_off() {
    assert!(Config::default().save_input_history);
    let off =
        load_text(r#"{"save_input_history":false}"#, ConfigTrust::User, &env()).expect("loads");
    assert!(!off.config.save_input_history);
    // A project may turn it off (it only keeps less), with no warning.
    let off = load_text(
        r#"{"save_input_history":false}"#,
        ConfigTrust::Project,
        &env(),
    )
    .expect("loads");
    assert!(!off.config.save_input_history);
    assert!(off.warnings.is_empty(), "{:?}", off.warnings);
    assert!(!Key::save_input_history.is_privileged());
    let err = load_text(r#"{"save_input_history":"no"}"#, ConfigTrust::User, &env())
        .expect_err("not a boolean")
        .to_string();
    assert!(
        err.contains("save_input_history") && err.contains("must be true or false"),
        "{err}"
    );
    assert_eq!(
        closest_key("save_input_histroy"),
        Some("save_input_history")
    );
}

#[test]
fn a_project_file_never_turns_the_input_history_back_on() {
    let user_off = r#"{"save_input_history":false,"model":"user"}"#;
    for project in [r#"{"save_input_history":true}"#, r#"{"max_turns":3}"#] {
        let (dir, env) = project_and_user(project, user_off);
        let loaded = load(&dir.path().join("repo"), &env, &Flags::default()).expect("load");
        assert_eq!(loaded.files.len(), 2);
        assert!(!loaded.config.save_input_history, "{project}");
        assert_eq!(
            loaded.source_of("save_input_history"),
            &Source::File(dir.path().join("home/.metron/config.json"))
        );
        assert_eq!(loaded.config.model, "user");
    }
    // The user's `true`, or no opinion, leaves the project's choice alone.
    for user in [r#"{"save_input_history":true}"#, "{}"] {
        let (dir, env) = project_and_user(r#"{"save_input_history":false}"#, user);
        let loaded = load(&dir.path().join("repo"), &env, &Flags::default()).expect("load");
        assert!(!loaded.config.save_input_history, "{user}");
        assert_eq!(
            loaded.source_of("save_input_history"),
            &Source::File(dir.path().join("repo").join(PROJECT_FILE))
        );
        let (dir, env) = project_and_user("{}", user);
        let loaded = load(&dir.path().join("repo"), &env, &Flags::default()).expect("load");
        assert!(loaded.config.save_input_history, "{user}");
        let expected = if user == "{}" {
            Source::Default
        } else {
            Source::File(dir.path().join("home/.metron/config.json"))
        };
        assert_eq!(loaded.source_of("save_input_history"), &expected);
    }
}

/// The project and user files of `project_and_user`, loaded with `env` changed by `adjust`.
fn load_both(project: &str, user: &str, adjust: impl FnOnce(&mut ConfigEnv)) -> Loaded {
    let (dir, mut env) = project_and_user(project, user);
    adjust(&mut env);
    let loaded = load(&dir.path().join("repo"), &env, &Flags::default());
    loaded.unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_projects_endpoint_never_replaces_the_one_the_user_chose() {
    let project = r#"{"endpoint":"localhost:9999"}"#;
    // The user's own file chose the endpoint.
    let loaded = load_both(project, r#"{"endpoint":"localhost:1234"}"#, |_| {});
    assert_eq!(loaded.config.endpoint, "http://localhost:1234/api/chat");
    assert!(matches!(loaded.source(Key::endpoint), Source::File(p) if p.ends_with("config.json")));
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].contains("ignoring `endpoint`")
            && loaded.warnings[0].contains("your own config"),
        "{:?}",
        loaded.warnings
    );
    // OLLAMA_HOST chose it: the project's value is not even laid down in between.
    let loaded = load_both(project, "{}", |env| {
        env.ollama_host = Some("localhost:4321".into());
    });
    assert_eq!(loaded.config.endpoint, "http://localhost:4321/api/chat");
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].contains("$OLLAMA_HOST"),
        "{:?}",
        loaded.warnings
    );
    // Nobody chose: a local value of the project's stands, as before.
    let loaded = load_both(project, "{}", |_| {});
    assert_eq!(loaded.config.endpoint, "http://localhost:9999/api/chat");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn a_projects_model_over_the_users_is_said_and_recorded() {
    let loaded = load_both(
        r#"{"model":"theirs\nforged"}"#,
        r#"{"model":"mine"}"#,
        |_| {},
    );
    assert_eq!(loaded.config.model, "theirs\nforged");
    assert_eq!(loaded.replaced_model.as_deref(), Some("mine"));
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let warning = &loaded.warnings[0];
    assert!(warning.contains("theirs\\nforged"), "{warning}");
    assert!(warning.contains("instead of yours (mine"), "{warning}");
    assert!(!warning.contains('\n'), "{warning}");
    // The same model, or a higher layer choosing again, is nothing to say.
    for (project, adjust) in [
        (r#"{"model":"mine"}"#, None),
        (r#"{"model":"theirs"}"#, Some("env")),
    ] {
        let loaded = load_both(project, r#"{"model":"mine"}"#, |env| {
            env.ollama_model = adjust.map(str::to_owned);
        });
        assert_eq!(loaded.replaced_model, None, "{project}");
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    }
    // No model in the user's file: the project's is no replacement.
    let loaded = load_both(r#"{"model":"theirs"}"#, "{}", |_| {});
    assert_eq!(loaded.replaced_model, None);
}

#[test]
fn the_user_and_project_files_merge_key_by_key() {
    let loaded = load_both(
        r#"{"model":"project","max_turns":3}"#,
        r#"{"num_ctx":8192,"allowed_commands":["cargo test"],"stream":false}"#,
        |_| {},
    );
    let user = Source::File(PathBuf::from("home/.metron/config.json"));
    let ends_with = |key: &str, tail: &str| match loaded.source_of(key) {
        Source::File(path) => path.ends_with(tail),
        _ => false,
    };
    assert_eq!(loaded.config.model, "project");
    assert!(ends_with("model", PROJECT_FILE));
    assert_eq!(loaded.config.max_turns, 3);
    assert_eq!(loaded.config.num_ctx, 8192);
    assert!(ends_with("num_ctx", ".metron/config.json"), "{user:?}");
    assert_eq!(loaded.config.allowed_commands, ["cargo test"]);
    assert!(!loaded.config.stream);
    assert_eq!(loaded.source_of("top_p"), &Source::Default);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn a_project_cannot_grant_privileged_keys_but_the_users_stay_in_force() {
    let loaded = load_both(
        r#"{"allowed_commands":["rm -rf"],"auto_approve_patches":true,"command_env_passthrough":["AWS_SECRET"]}"#,
        r#"{"allowed_commands":["cargo test"],"command_env_passthrough":["CARGO_HOME"]}"#,
        |_| {},
    );
    assert_eq!(loaded.config.allowed_commands, ["cargo test"]);
    assert_eq!(loaded.config.command_env_passthrough, ["CARGO_HOME"]);
    assert!(!loaded.config.auto_approve_patches);
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);

    // Let through, a project's list replaces the user's whole (lists are not extended).
    let loaded = load_both(
        r#"{"allowed_commands":["go test"]}"#,
        r#"{"allowed_commands":["cargo test"]}"#,
        |env| env.allow_project_commands = Some("1".into()),
    );
    assert_eq!(loaded.config.allowed_commands, ["go test"]);
}

#[test]
fn a_project_may_tighten_the_users_limits_but_not_loosen_them() {
    let loaded = load_both(
        r#"{"max_slice_lines":500,"max_turns":2,"list_max_entries":1000}"#,
        r#"{"max_slice_lines":100,"max_turns":8}"#,
        |_| {},
    );
    assert_eq!(loaded.config.max_slice_lines, 100, "not loosened");
    assert!(
        matches!(loaded.source_of("max_slice_lines"), Source::File(p) if p.ends_with("config.json"))
    );
    assert_eq!(loaded.config.max_turns, 2, "tightened");
    assert_eq!(
        loaded.config.list_max_entries, 1000,
        "the user set no limit"
    );
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let warning = &loaded.warnings[0];
    assert!(
        warning.contains("`max_slice_lines` 500") && warning.contains("sets 100"),
        "{warning}"
    );

    // disabled_tools: the user's list plus the project's; a project cannot re-offer one.
    let loaded = load_both(
        r#"{"disabled_tools":["search_text"]}"#,
        r#"{"disabled_tools":["run_command"]}"#,
        |_| {},
    );
    assert_eq!(loaded.config.disabled_tools, ["run_command", "search_text"]);
    let loaded = load_both(
        r#"{"disabled_tools":[]}"#,
        r#"{"disabled_tools":["run_command"]}"#,
        |_| {},
    );
    assert_eq!(loaded.config.disabled_tools, ["run_command"]);
    assert!(
        matches!(loaded.source_of("disabled_tools"), Source::File(p) if p.ends_with("config.json"))
    );
}

#[test]
fn the_environment_and_flags_stay_above_both_files() {
    let (dir, env) = project_and_user(r#"{"model":"project"}"#, r#"{"model":"user"}"#);
    let env = ConfigEnv {
        ollama_model: Some("env".into()),
        ..env
    };
    let root = dir.path().join("repo");
    let loaded = load(&root, &env, &Flags::default()).expect("load");
    assert_eq!(loaded.config.model, "env");
    let flags = Flags {
        model: Some("flag".into()),
        ..Flags::default()
    };
    let loaded = load(&root, &env, &flags).expect("load");
    assert_eq!(loaded.config.model, "flag");
    assert_eq!(loaded.source_of("model"), &Source::Flag(MODEL_FLAG));
}

#[test]
fn each_bad_file_is_named_with_the_fix() {
    let (dir, env) = project_and_user("{}", r#"{"max_turns":0}"#);
    let err = load(&dir.path().join("repo"), &env, &Flags::default())
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(err.contains("config.json must be positive"), "{err}");
    assert!(err.ends_with("fix that value in the file"), "{err}");

    // The user's bad value is reported as theirs even when the project sets the key.
    let (dir, env) = project_and_user(r#"{"max_turns":3}"#, r#"{"max_turns":0}"#);
    let err = load(&dir.path().join("repo"), &env, &Flags::default())
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(err.contains("config.json must be positive"), "{err}");

    let (dir, env) = project_and_user("{", "{}");
    let err = load(&dir.path().join("repo"), &env, &Flags::default())
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        err.contains("not valid JSON") && err.contains("fix the project's .metron.json"),
        "{err}"
    );
    let (dir, env) = project_and_user("{}", "{");
    let err = load(&dir.path().join("repo"), &env, &Flags::default())
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        err.contains("not valid JSON") && err.contains("fix your own config file"),
        "{err}"
    );
}

#[test]
fn metron_config_naming_the_project_file_reads_it_once_as_the_users() {
    let (dir, env) = project_and_user(r#"{"auto_approve_patches":true}"#, "{}");
    let root = dir.path().join("repo");
    let env = ConfigEnv {
        metron_config: Some(root.join(PROJECT_FILE)),
        ..env
    };
    let loaded = load(&root, &env, &Flags::default()).expect("load");
    assert_eq!(loaded.files.len(), 1);
    assert_eq!(loaded.files[0].trust, ConfigTrust::User);
    assert!(loaded.config.auto_approve_patches);
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("is inside the project")),
        "{:?}",
        loaded.warnings
    );
}

/// A JSON value for `key` that a user's file accepts and that differs from the default, so
/// that a test can tell whether a file's value was taken.
fn a_value_other_than_the_default(key: Key) -> Value {
    use serde_json::json;
    let default = Config::default().value(key);
    let candidates = [
        json!(true),
        json!(false),
        json!(7),
        json!(["X"]),
        json!(["./bin/x"]),
        json!("off"),
        json!("refuse"),
        json!("mistral"),
    ];
    candidates
        .into_iter()
        .find(|candidate| {
            let text = json!({ key.name(): candidate }).to_string();
            load_text(&text, ConfigTrust::User, &env())
                .is_ok_and(|loaded| loaded.config.value(key) != default)
        })
        .unwrap_or_else(|| panic!("add a value other than the default for `{key}` here"))
}

#[test]
fn every_privileged_key_is_refused_from_a_project_file() {
    let privileged: Vec<Key> = Key::ALL
        .iter()
        .copied()
        .filter(|key| key.is_privileged())
        .collect();
    // Pinned: a key that stops being privileged is a change to the trust model, and should
    // be made here as deliberately as in the table.
    assert_eq!(
        privileged,
        [
            Key::auto_approve_patches,
            Key::allowed_commands,
            Key::allowed_project_programs,
            Key::command_env_passthrough,
            Key::command_sandbox,
            Key::command_writable_paths,
            Key::command_protected_paths,
            Key::command_network,
            Key::command_git_writes,
            // Which files become the model's instructions is the user's choice: a
            // repository could otherwise point it at any name it ships.
            Key::instructions_fallbacks,
            // Deletes the user's sessions: a repository must never set it.
            Key::session_retention_days,
        ]
    );
    for &key in &privileged {
        let value = a_value_other_than_the_default(key);
        let text = serde_json::json!({ key.name(): value }).to_string();

        let user = load_text(&text, ConfigTrust::User, &env()).expect("loads");
        assert_eq!(user.config.value(key), value, "your own file sets `{key}`");

        let project = load_text(&text, ConfigTrust::Project, &env()).expect("loads");
        assert_eq!(project.config, Config::default(), "a project set `{key}`");
        assert_eq!(project.source(key), &Source::Default, "{key}");
        assert_eq!(project.warnings.len(), 1, "{:?}", project.warnings);
        assert!(
            project.warnings[0].contains(&format!("ignoring `{key}` in"))
                && project.warnings[0].contains("cannot grant authority"),
            "{}",
            project.warnings[0]
        );

        // METRON_ALLOW_PROJECT_COMMANDS lets `allowed_commands` through, and nothing else.
        let allow = ConfigEnv {
            allow_project_commands: Some("1".into()),
            ..ConfigEnv::default()
        };
        let allowed = load_text(&text, ConfigTrust::Project, &allow).expect("loads");
        let let_through = allowed.config.value(key) == value;
        assert_eq!(let_through, key == Key::allowed_commands, "{key}");
    }
}

/// For a tighten-only key: the user's value and a project's looser one (the user's must
/// stay), and the user's value, a project's tighter one and what results.
fn loosening_and_tightening(key: Key) -> ((Value, Value), (Value, Value, Value)) {
    use serde_json::json;
    match (key, Config::default().value(key)) {
        (_, Value::Number(_)) => ((json!(5), json!(6)), (json!(5), json!(4), json!(4))),
        (_, Value::Bool(_)) => (
            (json!(false), json!(true)),
            (json!(true), json!(false), json!(false)),
        ),
        (Key::remote_endpoint, _) => (
            (json!("refuse"), json!("warn")),
            (json!("warn"), json!("refuse"), json!("refuse")),
        ),
        (Key::disabled_tools, _) => (
            (json!(["run_command"]), json!([])),
            (
                json!(["run_command"]),
                json!(["search_text"]),
                json!(["run_command", "search_text"]),
            ),
        ),
        _ => panic!("add a looser and a tighter value for `{key}` here"),
    }
}

#[test]
fn every_tighten_only_key_refuses_a_loosening_value_and_accepts_a_tightening_one() {
    let is_users = |loaded: &Loaded, key: Key| matches!(loaded.source(key), Source::File(p) if p.ends_with("config.json"));
    let is_projects = |loaded: &Loaded, key: Key| matches!(loaded.source(key), Source::File(p) if p.ends_with(PROJECT_FILE));
    let tighten_only = Key::ALL.iter().filter(|key| key.is_tighten_only());
    for &key in tighten_only {
        let file = |value: &Value| serde_json::json!({ key.name(): value }).to_string();
        let ((user, looser), (user_too, tighter, tightened)) = loosening_and_tightening(key);

        let loaded = load_both(&file(&looser), &file(&user), |_| {});
        assert_eq!(loaded.config.value(key), user, "`{key}` was loosened");
        assert!(is_users(&loaded, key), "{key}: {:?}", loaded.source(key));
        if key.rule() == Rule::TightenOnly {
            assert_eq!(loaded.warnings.len(), 1, "{key}: {:?}", loaded.warnings);
            assert!(
                loaded.warnings[0].contains(&format!("ignoring `{key}` {looser}")),
                "{}",
                loaded.warnings[0]
            );
        }

        let loaded = load_both(&file(&tighter), &file(&user_too), |_| {});
        assert_eq!(
            loaded.config.value(key),
            tightened,
            "`{key}` was not tightened"
        );
        assert!(is_projects(&loaded, key), "{key}: {:?}", loaded.source(key));
        assert!(loaded.warnings.is_empty(), "{key}: {:?}", loaded.warnings);
    }
}

#[test]
fn every_integer_setting_is_a_budget_a_project_may_only_lower() {
    for &key in Key::ALL {
        // Not a budget: a deletion only the user may ask for (see the privileged keys).
        if Config::default().value(key).is_u64() && key != Key::session_retention_days {
            assert_eq!(key.rule(), Rule::TightenOnly, "`{key}` is a budget");
        }
    }
}

#[test]
fn each_limit_type_knows_which_way_is_looser() {
    use super::settings::Loosens;
    assert!(5u64.loosens(&6) && !5u64.loosens(&5) && !5u64.loosens(&4));
    assert!(false.loosens(&true) && !true.loosens(&false) && !false.loosens(&false));
    let (refuse, warn) = (RemoteEndpoint::Refuse, RemoteEndpoint::Warn);
    assert!(refuse.loosens(&warn) && !warn.loosens(&refuse) && !refuse.loosens(&refuse));
    let (on, off) = (SandboxMode::On, SandboxMode::Off);
    assert!(on.loosens(&off) && !off.loosens(&on) && !on.loosens(&on));
}

#[test]
fn a_typod_key_gets_a_suggestion() {
    for &key in Key::ALL {
        let name = key.name();
        // Another spelling of the same words, and one slip of the fingers.
        let shouting = name.to_uppercase().replace('_', "-");
        let camel = name
            .split('_')
            .enumerate()
            .map(|(i, word)| match (i, word.split_at(1)) {
                (0, _) => word.to_owned(),
                (_, (first, rest)) => first.to_uppercase() + rest,
            })
            .collect::<String>();
        let mut swapped: Vec<char> = name.chars().collect();
        swapped.swap(1, 2);
        let swapped: String = swapped.into_iter().collect();
        let dropped = format!("{}{}", &name[..2], &name[3..]);
        for typo in [shouting, camel, swapped, dropped] {
            assert_eq!(closest_key(&typo), Some(name), "{typo}");
        }
    }
    // A key cut short is completed when only one key begins so.
    assert_eq!(closest_key("timeout"), Some("timeout_seconds"));
    assert_eq!(closest_key("max_output"), Some("max_output_tokens"));
    assert_eq!(closest_key("search_max"), None, "two keys begin so");
    assert_eq!(closest_key("max"), None, "too short to say");

    let err = load_text(r#"{"maxTurns":3}"#, ConfigTrust::User, &env())
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown key `maxTurns`"), "{err}");
    assert!(err.contains("; did you mean `max_turns`?"), "{err}");
}

#[test]
fn a_projects_unknown_key_is_a_warning_and_the_rest_applies() {
    let loaded = load_text(
        r#"{"maxTurns":3,"zzzzzzzz":1,"max_output_tokens":100}"#,
        ConfigTrust::Project,
        &env(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.config.max_turns, Config::default().max_turns);
    assert_eq!(loaded.config.max_output_tokens, 100, "the rest applies");
    let [typo, unknown] = loaded.warnings.as_slice() else {
        panic!("two warnings: {:?}", loaded.warnings);
    };
    assert!(
        typo.contains("unknown key `maxTurns` in /p/.metron.json")
            && typo.contains("; did you mean `max_turns`? Rename it in that file"),
        "{typo}"
    );
    assert!(
        unknown.contains("`zzzzzzzz`") && unknown.contains("--example-config"),
        "{unknown}"
    );
    assert!(!unknown.contains("did you mean"), "{unknown}");
}

#[test]
fn a_projects_invalid_value_is_a_warning_and_the_layer_below_stays() {
    let cases = [
        (r#"{"top_p":1.5}"#, Key::top_p, "must be in (0, 1], got 1.5"),
        (
            r#"{"max_turns":0}"#,
            Key::max_turns,
            "must be positive, got 0",
        ),
        (r#"{"stream":"yes"}"#, Key::stream, "must be true or false"),
        (r#"{"model":" "}"#, Key::model, "must name a model"),
        (r#"{"endpoint":"ftp://x"}"#, Key::endpoint, "`endpoint`"),
        (
            r#"{"disabled_tools":"grep"}"#,
            Key::disabled_tools,
            "list of strings",
        ),
    ];
    for (text, key, needle) in cases {
        let with_max = text.replacen('{', r#"{"max_output_tokens":100,"#, 1);
        let loaded = load_text(&with_max, ConfigTrust::Project, &env())
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(
            loaded.config.value(key),
            Config::default().value(key),
            "{text}"
        );
        assert_eq!(loaded.source(key), &Source::Default, "{text}");
        assert_eq!(
            loaded.config.max_output_tokens, 100,
            "{text}: the rest applies"
        );
        let [warning] = loaded.warnings.as_slice() else {
            panic!("{text}: one warning: {:?}", loaded.warnings);
        };
        assert!(
            warning.starts_with("ignoring ") && warning.contains(needle),
            "{text}: {warning}"
        );
        assert!(warning.ends_with("fix that value in the file"), "{warning}");
    }
}

#[test]
fn a_projects_bad_value_over_the_users_keeps_the_users() {
    let loaded = load_both(r#"{"max_turns":0}"#, r#"{"max_turns":4}"#, |_| {});
    assert_eq!(loaded.config.max_turns, 4);
    assert!(
        matches!(loaded.source(Key::max_turns), Source::File(p) if p.ends_with("config.json")),
        "{:?}",
        loaded.source(Key::max_turns)
    );
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
}

#[test]
fn a_projects_disabled_tool_that_is_no_tool_is_dropped_with_a_warning() {
    let names = ["view_slice", "run_command", "search_text"];
    let mut loaded = load_both(
        r#"{"disabled_tools":["search_txt","run_command"]}"#,
        "{}",
        |_| {},
    );
    check_tool_names(&mut loaded, &names).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.config.disabled_tools, ["run_command"]);
    let [warning] = loaded.warnings.as_slice() else {
        panic!("one warning: {:?}", loaded.warnings);
    };
    assert!(
        warning.contains("`search_txt`") && warning.contains(".metron.json"),
        "{warning}"
    );
}

/// The README tells a new user to pull one model: it must be the default, or the first
/// run fails by the README. Every doc that names the default names this one.
#[test]
fn the_default_model_is_the_one_the_readme_pulls() {
    let read = |path: &str| {
        std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let readme = read("README.md");
    let pulled: Vec<&str> = readme
        .lines()
        .filter_map(|line| line.trim().strip_prefix("ollama pull "))
        .collect();
    assert_eq!(pulled, [DEFAULT_MODEL], "the README's `ollama pull` lines");
    let row = format!("| `model` | `{DEFAULT_MODEL}` |");
    assert!(readme.contains(&row), "README's config table: {row}");
    assert!(
        read("docs/configuration.md").contains(&row),
        "docs/configuration.md's table: {row}"
    );
    let usage = read("docs/usage.md");
    assert!(
        usage.contains(&format!("(model: {DEFAULT_MODEL}, the built-in default)")),
        "docs/usage.md's banner"
    );
    assert!(read("metron.example.json").contains(&format!("\"model\": \"{DEFAULT_MODEL}\"")));
}

/// `--no-instructions` is the top layer of `instructions`, named as its source; a
/// project's file may turn instructions off but not back on over the user's `false`, and
/// may not choose the fallback names at all.
#[test]
fn instructions_keys_their_flag_and_what_a_project_may_do_with_them() {
    let mut loaded = load_text("{}", ConfigTrust::User, &ConfigEnv::default()).expect("loads");
    assert!(loaded.config.instructions);
    assert_eq!(loaded.config.instructions_max_bytes, 8192);
    assert_eq!(loaded.config.instructions_fallbacks, ["CLAUDE.md"]);
    let flags = Flags {
        no_instructions: true,
        ..Flags::default()
    };
    apply_flags(&mut loaded, &flags).expect("a flag");
    assert!(!loaded.config.instructions);
    assert_eq!(
        loaded.source_of("instructions").to_string(),
        "--no-instructions"
    );

    let loaded = load_both(
        r#"{"instructions": true, "instructions_fallbacks": ["EVIL.md"]}"#,
        r#"{"instructions": false}"#,
        |_| {},
    );
    assert!(!loaded.config.instructions, "{:?}", loaded.warnings);
    assert_eq!(loaded.config.instructions_fallbacks, ["CLAUDE.md"]);
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("instructions_fallbacks")),
        "{:?}",
        loaded.warnings
    );

    for bad in [r#"["../x.md"]"#, r#"["a/b.md"]"#, r#"[""]"#, r#"[".."]"#] {
        let text = format!(r#"{{"instructions_fallbacks": {bad}}}"#);
        let err = load_text(&text, ConfigTrust::User, &ConfigEnv::default())
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(
            err.contains("must be a file name without a directory"),
            "{bad}: {err}"
        );
    }
    let zero = load_text(
        r#"{"instructions_max_bytes": 0}"#,
        ConfigTrust::User,
        &ConfigEnv::default(),
    );
    assert!(zero.is_err());
    let at_the_bound = load_text(
        r#"{"instructions_max_bytes": 1048576}"#,
        ConfigTrust::User,
        &ConfigEnv::default(),
    );
    assert!(at_the_bound.is_ok());
    let over = load_text(
        r#"{"instructions_max_bytes": 1048577}"#,
        ConfigTrust::User,
        &ConfigEnv::default(),
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(over.contains("must be at most 1048576 bytes"), "{over}");
}
