// The OpenReports API (Report CRD) the policy-report tests install, pinned: its CRDs are
// copied out of this module by tests/control-plane/build.sh.
module pipewarden.dev/control-plane/openreports

go 1.25.7

require github.com/openreports/reports-api v0.2.1
