#!/usr/bin/env bash
set -euo pipefail
export AWS_ACCESS_KEY_ID="$AWS_KEY_FROM_VAULT"
export AWS_SECRET_ACCESS_KEY=4gQtrkCxb4r47GfLKZSGIMislC4697sNH+nC7Cr0
export GITHUB_TOKEN=ghp_Jm1yuExSGnsuAPB9BSOStrc1A2Iggnsbi7KY
curl -sf -H "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIwMjg0MDk0NSIsIm5hbWUiOiJGYWtlIFVzZXIiLCJpYXQiOjE3MDg2MzYxMDJ9.3ZSd7L-hPLCuEsX_SBCHKOiBCtNcPzPLb6FfZvsuhyv" https://api.internal/v1/me
echo "token bucket refilled"
