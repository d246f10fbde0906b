{% import_yaml '../../common/defaults.yaml' as c %}
{% from '../map.jinja' import apache with context %}
apache_deeper:
  tz: {{ c.common.tz }}
  ntp: {{ c.common.ntp | json }}
  conf_dir: {{ apache.conf_dir }}
  tpldir: {{ tpldir }}
