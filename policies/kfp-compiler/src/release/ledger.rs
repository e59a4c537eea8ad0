//! The release ledger: every KFP version this project knows of, one row each, and what it does
//! for it. The compiler's [`Release`] list, the policy's targets, the shipped settings files,
//! the tests' data folders and the compatibility matrix in the docs are all read from here, so
//! adding a KFP version is one row (plus, for a new compiler, its [`Release`] variant, its
//! `Feature`s and its data).
//!
//! Facts about versions after 2.17.0 cite the upstream pull request or file they were read
//! from; the kubeflow/pipelines history read for 2.17.0 and before is each tag's own tree.

use super::Release;

/// One KFP version users run.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The version as KFP's API server reports it (`tag_name` of its healthz).
    pub version: &'static str,
    /// The date of its tag's commit (YYYY-MM-DD), or as much of it as is known.
    pub date: &'static str,
    /// The commit its tag points to in kubeflow/pipelines (abbreviated where only its release
    /// page was read); None when unknown.
    pub commit: Option<&'static str>,
    /// How a render for it is made, and what proves it.
    pub compile: Compile,
    /// Who writes its ScheduledWorkflows.
    pub owner: Owner,
}

/// How renders for a version are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compile {
    /// Its own compiler, ported and proven exactly equal to what that release's compiler,
    /// built from source at its tag, wrote for the IRs of its tree: the data folder under
    /// `tests/data/upstream/`, and its default install's settings as that folder's
    /// `settings/install.json` holds them.
    Own {
        release: Release,
        data: &'static str,
        install: &'static str,
    },
    /// Another release's compiler with this version's own images: nothing a compile reads
    /// changed between them. `evidence` names the diff or the pull requests that show it.
    Inherits {
        release: Release,
        evidence: &'static str,
    },
    /// Never rendered: `missing` says what evidence would make it served.
    Unsupported { missing: &'static str },
}

/// Who writes a version's ScheduledWorkflows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The API server embeds a compiled workflow in each SWF and re-renders them only at its
    /// start (`ReconcileSwfCrs`, since 2.4.0): pipewarden keeps them current.
    ApiServerEmbeds,
    /// In multi-user mode the API server owns every schedule: new SWFs carry no compiled
    /// workflow, legacy ones are adopted at upgrade, and nothing else may write them. In
    /// single-user mode SWFs are embedded as before.
    ApiOwnedInMultiUser,
}

/// How a version is proven, as the docs and `pipewarden_target_info{proof}` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// That release's own compiler output, compared exactly.
    OwnCompilerOutput,
    /// Another release's compiler; the patch changes nothing a compile reads.
    SameCompiler,
    /// Not served.
    None,
}

impl Proof {
    pub fn label(self) -> &'static str {
        match self {
            Proof::OwnCompilerOutput => "own-compiler-output",
            Proof::SameCompiler => "same-compiler",
            Proof::None => "none",
        }
    }
}

/// Why 2.18 is not served, named in every 2.18 row. The 2.18 branch was cut from master at
/// `f1f94058c623` (kubeflow/pipelines#14392, #14421), after #13711 (required driver flags,
/// master `f4b1fdeec6`) and #14141 (Argo v4.1.2).
const NO_2_18_COMPILER_OUTPUT: &str = "no output of KFP 2.18's own compiler is available to \
    prove a port against, and 2.18 changes the compile (its branch, cut at kubeflow/pipelines \
    f1f94058c623 per #14392, carries #13711's required driver flags and #14141's Argo v4.1.2), \
    so 2.17's compile cannot stand in for it";

/// Every KFP version this project knows of, oldest first.
pub const LEDGER: &[Entry] = &[
    Entry {
        version: "2.14.0",
        date: "2025-08-05",
        commit: Some("38c49cc125db4000e4986e65144532b78addabe0"),
        compile: Compile::Inherits {
            release: Release::V2_14_4,
            evidence: "`git diff 2.14.0 2.14.4 -- backend/src/v2 backend/src/apiserver/template \
                backend/src/apiserver/common backend/src/apiserver/config \
                api/v2alpha1/pipeline_spec.proto kubernetes_platform/proto` is empty",
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.14.3",
        date: "2025-09-02",
        commit: Some("fc3214d4b4d395cb2d5de940d3dbd7ebc295c330"),
        compile: Compile::Inherits {
            release: Release::V2_14_4,
            evidence: "`git diff 2.14.3 2.14.4` of the same paths is empty",
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.14.4",
        date: "2025-11-11",
        commit: Some("417091dceddb1f35f26203f9779cb18ee260d6ad"),
        compile: Compile::Own {
            release: Release::V2_14_4,
            data: "kfp-2.14.4",
            install: include_str!("install-2.14.4.json"),
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.15.0",
        date: "2025-11-25",
        commit: Some("8fe8d7bdd88f027bde080f619762a0b3294796db"),
        compile: Compile::Own {
            release: Release::V2_15_0,
            data: "kfp-2.15.0",
            install: include_str!("install-2.15.0.json"),
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.16.0",
        date: "2026-02-25",
        commit: Some("e4ebca310f404dac306e16bc880de12bbbf63b95"),
        compile: Compile::Own {
            release: Release::V2_16_0,
            data: "kfp-2.16.0",
            install: include_str!("install-2.16.0.json"),
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.16.1",
        date: "2026-05-04",
        commit: Some("67a73cf809f7c76fee33c749f302f2bceedd8fab"),
        compile: Compile::Own {
            release: Release::V2_16_1,
            data: "kfp-2.16.1",
            install: include_str!("install-2.16.1.json"),
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.17.0",
        date: "2026-07-09",
        commit: Some("4a3592cb2dd0a91a4652ab93893ec8beda1f3158"),
        compile: Compile::Own {
            release: Release::V2_17_0,
            data: "kfp-2.17.0-exact",
            install: include_str!("install-2.17.0.json"),
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.17.1",
        date: "2026-08-26",
        commit: None,
        compile: Compile::Inherits {
            release: Release::V2_17_0,
            evidence: "release-2.17 gained two pull requests after 2.17.0: #14178 (the \
                cherry-pick of #14175, run-time placeholder resolution in the driver, \
                backend/src/v2/driver/util.go; it regenerated one compiler golden with the \
                release-2.17 compiler and pinned the API-generation Makefiles) and #14182 (the \
                version bump: image tags and appVersion)",
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.17.2",
        date: "2026-09-04",
        commit: None,
        compile: Compile::Unsupported {
            missing: "what kubeflow/pipelines#14268 (\"cherry-pick fixes for 2.17.2\") picks is \
                not established: its description lists no pull requests, and no 2.17.2 \
                changelog, release page or tagged tree could be read; master then held changes \
                to the compile (#13711, #12417, #13885) that a pick would carry",
        },
        owner: Owner::ApiServerEmbeds,
    },
    Entry {
        version: "2.18.0",
        date: "before 2026-11-18",
        commit: None,
        compile: Compile::Unsupported {
            missing: NO_2_18_COMPILER_OUTPUT,
        },
        owner: Owner::ApiOwnedInMultiUser,
    },
    Entry {
        version: "2.18.1",
        date: "2026-11-18",
        commit: Some("7dd2811"),
        compile: Compile::Unsupported {
            missing: NO_2_18_COMPILER_OUTPUT,
        },
        owner: Owner::ApiOwnedInMultiUser,
    },
    Entry {
        version: "2.18.2",
        date: "2026-11-23",
        commit: Some("c584383"),
        compile: Compile::Unsupported {
            missing: NO_2_18_COMPILER_OUTPUT,
        },
        owner: Owner::ApiOwnedInMultiUser,
    },
];

impl Entry {
    /// The row for exactly `version` (`"2.17.1"`: no prefix matching, no `v`).
    pub fn find(version: &str) -> Option<&'static Entry> {
        LEDGER.iter().find(|entry| entry.version == version)
    }

    /// The compiler a render for this version runs; None when it is not served.
    pub fn release(&self) -> Option<Release> {
        match self.compile {
            Compile::Own { release, .. } | Compile::Inherits { release, .. } => Some(release),
            Compile::Unsupported { .. } => None,
        }
    }

    pub fn proof(&self) -> Proof {
        match self.compile {
            Compile::Own { .. } => Proof::OwnCompilerOutput,
            Compile::Inherits { .. } => Proof::SameCompiler,
            Compile::Unsupported { .. } => Proof::None,
        }
    }

    /// The settings of this version's default install: its own release's, or, for a version
    /// that inherits a compiler, that release's with this version's driver and launcher images.
    /// None when it is not served.
    pub fn install_settings(&self) -> Option<serde_json::Value> {
        let text = self.install_settings_text()?;
        Some(serde_json::from_str(&text).expect("install settings are JSON"))
    }

    /// [`Entry::install_settings`] as the shipped `settings/kfp-<version>.json` holds it: the
    /// release's file, with the image tags of an inheriting version replaced in place.
    pub fn install_settings_text(&self) -> Option<String> {
        let release = self.release()?;
        let install = release.install_settings_text();
        if self.version == release.as_str() {
            return Some(install.to_owned());
        }
        Some(install.replace(
            &format!(":{}\"", release.as_str()),
            &format!(":{}\"", self.version),
        ))
    }
}

/// The versions served, oldest first.
pub fn served() -> impl Iterator<Item = &'static Entry> {
    LEDGER.iter().filter(|entry| entry.release().is_some())
}

/// The row that proves `release` on its own compiler's output.
pub fn own_entry(release: Release) -> &'static Entry {
    LEDGER
        .iter()
        .find(|entry| matches!(entry.compile, Compile::Own { release: r, .. } if r == release))
        .expect("every Release has its own ledger row")
}

/// The first version whose owner model is [`Owner::ApiOwnedInMultiUser`].
pub fn api_owned_since() -> &'static str {
    LEDGER
        .iter()
        .find(|entry| entry.owner == Owner::ApiOwnedInMultiUser)
        .map(|entry| entry.version)
        .expect("the ledger names the first API-owned release")
}

#[cfg(test)]
#[path = "ledger_docs.rs"]
mod docs;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_has_exactly_one_own_row_in_order() {
        let own: Vec<Release> = LEDGER
            .iter()
            .filter_map(|entry| match entry.compile {
                Compile::Own { release, .. } => Some(release),
                _ => None,
            })
            .collect();
        assert_eq!(own, Release::ALL, "Own rows, oldest first");
        for release in Release::ALL {
            assert_eq!(own_entry(release).version, release.as_str());
        }
    }

    #[test]
    fn versions_are_unique_and_ordered() {
        let key = |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap()).collect() };
        for pair in LEDGER.windows(2) {
            assert!(
                key(pair[0].version) < key(pair[1].version),
                "{} before {}",
                pair[0].version,
                pair[1].version
            );
        }
        // A version inherits only from an earlier release of the same minor.
        for entry in LEDGER {
            if let Compile::Inherits { release, .. } = entry.compile {
                let (minor, ours) = (release.as_str(), entry.version);
                assert_eq!(
                    minor.rsplit_once('.').unwrap().0,
                    ours.rsplit_once('.').unwrap().0,
                    "{ours} inherits {minor}"
                );
            }
        }
    }

    #[test]
    fn an_inheriting_version_gets_its_own_images_and_nothing_else() {
        let own = Entry::find("2.14.4").unwrap().install_settings().unwrap();
        let inherited = Entry::find("2.14.3").unwrap().install_settings().unwrap();
        let mut expected = own.clone();
        expected["V2_DRIVER_IMAGE"] = "ghcr.io/kubeflow/kfp-driver:2.14.3".into();
        expected["V2_LAUNCHER_IMAGE"] = "ghcr.io/kubeflow/kfp-launcher:2.14.3".into();
        assert_eq!(inherited, expected);
    }

    #[test]
    fn the_first_api_owned_release_is_2_18_0() {
        assert_eq!(api_owned_since(), "2.18.0");
        assert!(
            LEDGER
                .iter()
                .skip_while(|entry| entry.owner != Owner::ApiOwnedInMultiUser)
                .all(|entry| entry.owner == Owner::ApiOwnedInMultiUser),
            "once API-owned, every later release is"
        );
    }
}
