apt:
  mirror: http://deb.debian.org/debian
  unattended_upgrades: true
  sources: [main, contrib]
