{% from 'nginx/map.jinja' import nginx with context %}
nginx:
  pkg: {{ nginx.pkg }}
  service: {{ nginx.service }}
  conf_dir: {{ nginx.conf_dir }}
  user: {{ nginx.user }}
  worker_processes: {{ grains.get('num_cpus', 2) }}
  sites:
    default:
      listen: 80
      server_name: {{ grains['id'] }}
      root: /var/www/html
