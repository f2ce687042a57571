"""The `batkube` command line: thin click glue over runs/, inputs/, analysis/, experiments/ and
controlplane/."""
