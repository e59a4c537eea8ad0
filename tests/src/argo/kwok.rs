//! kwok (`sigs.k8s.io/kwok`) on the local control plane: one simulated node, and Stages that take
//! the pods bound to it through Pending -> Running -> Succeeded or Failed, with exit codes chosen
//! by the pod's annotations (see [`super`]), and remove pods once deleted (as a kubelet confirms a
//! deletion). No container runs.

use std::time::Duration;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use crate::ControlPlane;
use crate::supervise::{Supervised, state_dir};
use crate::wait;

/// The annotation kwok's `--manage-nodes-with-annotation-selector` selects nodes by.
const NODE_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

/// kwok's configuration: the node's addresses, and the Stages it plays.
pub const CONFIG: &str = r#"apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.244.0.0/16
  nodeIP: 10.0.0.1
---
# A new node reports Ready with room for any number of pods.
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: .status.phase
      operator: NotIn
      values: [Running]
  next:
    statusTemplate: |
      phase: Running
      conditions:
      - type: Ready
        status: "True"
        reason: KubeletReady
        message: simulated by kwok
        lastHeartbeatTime: {{ Now | Quote }}
        lastTransitionTime: {{ Now | Quote }}
      addresses:
      - type: InternalIP
        address: {{ NodeIP | Quote }}
      allocatable: {cpu: "1000", memory: 1Ti, pods: "100000"}
      capacity: {cpu: "1000", memory: 1Ti, pods: "100000"}
---
# A pod bound to the node starts: init containers done, every container running.
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-running
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Pending]
  delay:
    durationMilliseconds: 200
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      hostIP: {{ NodeIP | Quote }}
      podIP: {{ PodIP | Quote }}
      startTime: {{ $now | Quote }}
      conditions:
      - {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        restartCount: 0
        state:
          terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running: {startedAt: {{ $now | Quote }}}
      {{ end }}
---
# After pipewarden.test/run-ms (default 1 s) every container exits: main and Argo's wait container
# with the codes the pod's annotations give (default 0), the others with 0.
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-exit
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Running]
  delay:
    durationMilliseconds: 1000
    durationFrom:
      expressionFrom: .metadata.annotations["pipewarden.test/run-ms"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $main := or (index .metadata.annotations "pipewarden.test/main-exit-code") "0" }}
      {{ $wait := or (index .metadata.annotations "pipewarden.test/wait-exit-code") "0" }}
      phase: {{ if or (ne $main "0") (ne $wait "0") }}Failed{{ else }}Succeeded{{ end }}
      conditions:
      - {type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      {{ $code := "0" }}
      {{ if eq .name "main" }}{{ $code = $main }}{{ end }}
      {{ if eq .name "wait" }}{{ $code = $wait }}{{ end }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: {{ $code }}
            reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
---
# A deleted pod goes away at once, as a kubelet confirms a deletion (Argo's pod GC deletes pods).
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-remove
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: Exists
  next:
    finalizers:
      empty: true
    delete: true
"#;

/// A running kwok and the node it simulates.
pub struct Kwok {
    pub node: String,
    /// kwok's version, as pinned in its wrapper module.
    pub version: String,
    process: Supervised,
}

impl Kwok {
    /// Starts kwok against the control plane and creates its node; waits until the node is Ready.
    pub async fn start(control_plane: &ControlPlane) -> Result<Self> {
        let binary = super::built("kwok")?;
        let version = std::fs::read_to_string(binary.with_extension("version"))
            .ok()
            .and_then(|marker| marker.split_whitespace().nth(1).map(str::to_owned))
            .unwrap_or_else(|| "(unknown version)".to_owned());
        let dir = state_dir("kwok")?;
        let config = dir.join("kwok.yaml");
        std::fs::write(&config, CONFIG)?;
        let args = [
            format!("--kubeconfig={}", control_plane.kubeconfig().display()),
            format!("--config={}", config.display()),
            format!(
                "--manage-nodes-with-annotation-selector={}={}",
                NODE_ANNOTATION.0, NODE_ANNOTATION.1
            ),
        ];
        let process = Supervised::spawn("kwok", dir, &binary, &args)?;
        let node = "kwok-node-0".to_owned();
        let nodes: Api<Node> = Api::all(control_plane.client()?);
        let object = Node {
            metadata: ObjectMeta {
                name: Some(node.clone()),
                annotations: Some([(NODE_ANNOTATION.0.into(), NODE_ANNOTATION.1.into())].into()),
                labels: Some(
                    [
                        ("kubernetes.io/hostname".into(), node.clone()),
                        ("type".into(), "kwok".into()),
                    ]
                    .into(),
                ),
                ..Default::default()
            },
            ..Default::default()
        };
        match nodes.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(e) => return Err(e).context("creating the kwok node"),
        }
        wait::until(
            &format!("kwok to report node {node} Ready"),
            Duration::from_secs(60),
            || async {
                process.ensure_running()?;
                let ready = nodes
                    .get(&node)
                    .await?
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                Ok(ready.then_some(()))
            },
        )
        .await?;
        Ok(Kwok {
            node,
            version,
            process,
        })
    }

    /// Fails with the tail of kwok's log if it exited.
    pub fn ensure_running(&self) -> Result<()> {
        self.process.ensure_running()
    }
}
