"""Declarative, resumable experiments: YAML files → runs → tables and figures (`batkube experiment`)."""
