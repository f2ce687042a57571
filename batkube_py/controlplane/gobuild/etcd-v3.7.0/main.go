// etcd, unmodified: upstream etcdmain from the pinned go.etcd.io/etcd/server/v3 module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
