{% from './map.jinja' import apache with context %}
{% import_yaml './defaults.yaml' as d %}
apache_relative:
  pkg: {{ apache.get('pkg', 'none') }}
  port_from_relative_yaml: {{ d.apache.port }}
