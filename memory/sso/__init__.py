"""Single sign-on: OIDC sign-in, team roles from the identity provider's groups, SCIM provisioning."""
