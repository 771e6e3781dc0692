module kca-webhook-lab/upstream/kyverno

go 1.26.6

require github.com/kyverno/kyverno v1.19.1

replace k8s.io/pod-security-admission => github.com/kyverno/pod-security-admission v0.0.0-20251031094455-46f20778634f
