"""Word lists the rules lean on. Short on purpose: a miss costs a label, a wrong entry a bad merge.

Known packages are recognised in any case ("redis", "Redis"), so the statistical NER, which
reads "Redis" as a person and "PostgreSQL 16" as a date, never gets to label them.
"""

from __future__ import annotations


def words(text: str) -> frozenset[str]:
    """A word list written as a block of text, one or more words a line."""
    return frozenset(text.split())


PACKAGES = words(
    """
    redis valkey memcached postgres postgresql mysql mariadb sqlite mongodb mongo cassandra
    dynamodb clickhouse elasticsearch opensearch kafka rabbitmq nats zookeeper etcd consul vault
    nginx haproxy envoy traefik caddy django flask fastapi starlette uvicorn gunicorn celery
    sidekiq rails laravel spring express react vue angular svelte nextjs webpack vite babel
    eslint prettier typescript javascript python golang rust java kotlin node nodejs deno bun
    numpy pandas scipy pytorch tensorflow sklearn pydantic sqlalchemy alembic httpx requests
    aiohttp pytest jest mypy ruff black poetry pip npm yarn pnpm docker podman kubernetes k8s
    helm terraform ansible pulumi prometheus grafana loki jaeger opentelemetry sentry datadog
    jenkins airflow spark hadoop flink graphql grpc protobuf kuzu spacy openssl libc glibc
    """
)

PRODUCTS = words(
    """
    github gitlab bitbucket jira confluence slack pagerduty opsgenie aws gcp azure cloudflare
    stripe twilio sendgrid heroku vercel netlify s3 ec2 lambda cloudwatch bigquery snowflake
    """
)

# everyday words too: recognised only when capitalised ("React", not "react to")
CAPITALISED_ONLY = words(
    """
    spring express react node rust vault black requests spark bun jest lambda helm envoy consul
    loki babel flink nats bun deno swift go
    """
)

# service names: "<word> service", "billing-service", "auth-api", "email-worker"
SERVICE_SUFFIXES = ("service", "svc", "api", "worker", "server", "daemon", "gateway", "proxy")

# words never worth a node on their own ("we", "something", "it")
PRONOUNS = words(
    """
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves this that these
    those who whom whose which what something anything everything nothing someone anyone
    everyone nobody somebody anybody everybody one ones thing things stuff lot lots bit kind sort
    way all both each either neither none some any other others another such same
    """
)

# chat words that name nothing: greetings, thanks, exclamations, contractions of pronouns
CHAT_WORDS = words(
    """
    thanks thank thx sorry please hey hi hello hiya bye goodbye wow woah whoa woohoo yay yeah yep
    yup yes no nope oh ooh ah aw aww awesome cool congrats congratulations ok okay lol haha hmm
    omg ugh oops i'm i've i'd i'll you're you've you'd you'll we're we've we'd we'll they're
    they've it's that's let's yo ya yah awww anytime absolutely definitely totally glad
    """
)

# determiners and quantifiers trimmed from the edges of a phrase
TRIM_WORDS = words(
    """
    the a an this that these those my our your his her its their some any each every all both
    no another such which what whose
    """
)

# words a lower-case phrase (rules only) never runs across
PHRASE_STOPS = words(
    """
    yesterday today tomorrow tonight now then ago last next again also still already just only
    very really so too soon later earlier after before since until while when where because
    """
)

DATE_WORDS = words(
    """
    yesterday today tomorrow tonight morning afternoon evening night week weekend month year
    minute minutes hour hours
    decade day days weeks months years ago last next monday tuesday wednesday thursday friday
    saturday sunday january february march april may june july august september october
    november december spring summer autumn fall winter quarter q1 q2 q3 q4 christmas
    """
)

# acronyms that are prefixes of standards, not ticket keys: "UTF-8", "SHA-256"
NOT_TICKET_PREFIXES = frozenset(
    {"UTF", "SHA", "AES", "ISO", "RFC", "HTTP", "TLS", "SSL", "IPV", "MD", "RSA", "GPT", "COVID"}
)

# people do these; an unlabelled capitalised subject of one is most likely a person
HUMAN_VERBS = words(
    """
    go went say tell ask feel think want love like hate enjoy visit paint meet attend join
    remember plan decide hope wish learn read write cook travel move adopt celebrate start
    finish share talk call mention agree promise marry date run walk swim play sing dance
    """
)

FILE_EXTENSIONS = words(
    """
    py pyi js mjs cjs ts tsx jsx json yaml yml toml ini cfg conf env md rst txt csv sql sh
    bash zsh go rs java kt rb php c h cc cpp hpp cs swift html css scss lock xml proto tf
    dockerfile log ipynb
    """
)
