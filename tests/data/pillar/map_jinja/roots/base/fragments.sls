{% import 'common/macros.jinja' as m %}
fragments:
{% include 'common/fragment.jinja' %}
  users:
    {{ m.user('alice', 1001) }}
    {{ m.user('bob', 1002) }}
