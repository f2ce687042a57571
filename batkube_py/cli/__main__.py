from batkube_py.cli.app import entry

entry()
