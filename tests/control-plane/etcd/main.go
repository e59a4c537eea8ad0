// etcd server built from the published module, as `go install go.etcd.io/etcd/v3` cannot be.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
