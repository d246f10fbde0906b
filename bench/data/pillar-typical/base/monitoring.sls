monitoring:
  agent: node_exporter
  port: 9100
  scrape_interval: 15s
