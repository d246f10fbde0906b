app:
  name: shop
  version: "1.4.2"
  port: 8080
  workers: {{ grains.get('num_cpus', 2) * 2 }}
  db_host: db.{{ grains.get('region', 'eu') }}.internal
  features: {{ {'cart': True, 'search': grains.get('region') == 'eu'} | json }}
