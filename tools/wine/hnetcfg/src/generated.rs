// The interfaces' methods (from windows 0.62's trait definitions); what calicoctl-win does
// not call answers E_NOTIMPL.

use super::*;

/// IDispatch of a rule object (`Rule`, `OldRule`).
macro_rules! rule_dispatch {
    ($t:ty) => {
        impl IDispatch_Impl for $t {
            fn GetTypeInfoCount(&self) -> windows::core::Result<u32> {
                Err(E_NOTIMPL.into())
            }
            fn GetTypeInfo(&self, _itinfo: u32, _lcid: u32) -> windows::core::Result<ITypeInfo> {
                Err(E_NOTIMPL.into())
            }
            fn GetIDsOfNames(
                &self,
                _riid: *const windows::core::GUID,
                _rgsznames: *const windows::core::PCWSTR,
                _cnames: u32,
                _lcid: u32,
                _rgdispid: *mut i32,
            ) -> windows::core::Result<()> {
                Err(E_NOTIMPL.into())
            }
            fn Invoke(
                &self,
                _dispidmember: i32,
                _riid: *const windows::core::GUID,
                _lcid: u32,
                _wflags: DISPATCH_FLAGS,
                _pdispparams: *const DISPPARAMS,
                _pvarresult: *mut windows::Win32::System::Variant::VARIANT,
                _pexcepinfo: *mut EXCEPINFO,
                _puargerr: *mut u32,
            ) -> windows::core::Result<()> {
                Err(E_NOTIMPL.into())
            }
        }
    };
}

/// INetFwRule of a rule object (`Rule`, `OldRule`), through its `get` and `set`.
macro_rules! rule_methods {
    ($t:ty) => {
        impl INetFwRule_Impl for $t {
            fn Name(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().name))
            }
            fn SetName(&self, name: &windows::core::BSTR) -> windows::core::Result<()> {
                self.set(|r| r.name = name.to_string())
            }
            fn Description(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().description))
            }
            fn SetDescription(&self, desc: &windows::core::BSTR) -> windows::core::Result<()> {
                self.set(|r| r.description = desc.to_string())
            }
            fn ApplicationName(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().application_name))
            }
            fn SetApplicationName(
                &self,
                imagefilename: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                self.set(|r| r.application_name = imagefilename.to_string())
            }
            fn ServiceName(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().service_name))
            }
            fn SetServiceName(
                &self,
                servicename: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                self.set(|r| r.service_name = servicename.to_string())
            }
            fn Protocol(&self) -> windows::core::Result<i32> {
                Ok(self.get().protocol)
            }
            fn SetProtocol(&self, protocol: i32) -> windows::core::Result<()> {
                self.set(|r| r.protocol = protocol)
            }
            fn LocalPorts(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().local_ports))
            }
            fn SetLocalPorts(
                &self,
                portnumbers: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                ports_allowed(&self.get())?;
                self.set(|r| r.local_ports = portnumbers.to_string())
            }
            fn RemotePorts(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().remote_ports))
            }
            fn SetRemotePorts(
                &self,
                portnumbers: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                ports_allowed(&self.get())?;
                self.set(|r| r.remote_ports = portnumbers.to_string())
            }
            fn LocalAddresses(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().local_addresses))
            }
            fn SetLocalAddresses(
                &self,
                localaddrs: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                self.set(|r| r.local_addresses = localaddrs.to_string())
            }
            fn RemoteAddresses(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().remote_addresses))
            }
            fn SetRemoteAddresses(
                &self,
                remoteaddrs: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                self.set(|r| r.remote_addresses = stored_remote_addresses(&remoteaddrs.to_string()))
            }
            fn IcmpTypesAndCodes(&self) -> windows::core::Result<windows::core::BSTR> {
                Err(E_NOTIMPL.into())
            }
            fn SetIcmpTypesAndCodes(
                &self,
                _icmptypesandcodes: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                Err(E_NOTIMPL.into())
            }
            fn Direction(&self) -> windows::core::Result<NET_FW_RULE_DIRECTION> {
                Ok(NET_FW_RULE_DIRECTION(self.get().direction))
            }
            fn SetDirection(&self, dir: NET_FW_RULE_DIRECTION) -> windows::core::Result<()> {
                self.set(|r| r.direction = dir.0)
            }
            fn Interfaces(
                &self,
            ) -> windows::core::Result<windows::Win32::System::Variant::VARIANT> {
                interfaces_variant(&self.get().interfaces)
            }
            fn SetInterfaces(
                &self,
                interfaces: &windows::Win32::System::Variant::VARIANT,
            ) -> windows::core::Result<()> {
                // SAFETY: the caller's VARIANT, valid for the call.
                let names = unsafe { names_in(interfaces) }?;
                self.set(|r| r.interfaces = names)
            }
            fn InterfaceTypes(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().interface_types))
            }
            fn SetInterfaceTypes(
                &self,
                interfacetypes: &windows::core::BSTR,
            ) -> windows::core::Result<()> {
                self.set(|r| r.interface_types = interfacetypes.to_string())
            }
            fn Enabled(&self) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
                Ok(if self.get().enabled {
                    VARIANT_TRUE
                } else {
                    VARIANT_FALSE
                })
            }
            fn SetEnabled(
                &self,
                enabled: windows::Win32::Foundation::VARIANT_BOOL,
            ) -> windows::core::Result<()> {
                self.set(|r| r.enabled = enabled != VARIANT_FALSE)
            }
            fn Grouping(&self) -> windows::core::Result<windows::core::BSTR> {
                Ok(BSTR::from(self.get().grouping))
            }
            fn SetGrouping(&self, context: &windows::core::BSTR) -> windows::core::Result<()> {
                self.set(|r| r.grouping = context.to_string())
            }
            fn Profiles(&self) -> windows::core::Result<i32> {
                Ok(self.get().profiles)
            }
            fn SetProfiles(&self, profiletypesbitmask: i32) -> windows::core::Result<()> {
                self.set(|r| r.profiles = profiletypesbitmask)
            }
            fn EdgeTraversal(
                &self,
            ) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
                Ok(if self.get().edge_traversal == EDGE_ALLOW {
                    VARIANT_TRUE
                } else {
                    VARIANT_FALSE
                })
            }
            fn SetEdgeTraversal(
                &self,
                enabled: windows::Win32::Foundation::VARIANT_BOOL,
            ) -> windows::core::Result<()> {
                edge_traversal_allowed(&self.get(), enabled)?;
                self.set(|r| r.edge_traversal = i32::from(enabled != VARIANT_FALSE))
            }
            fn Action(&self) -> windows::core::Result<NET_FW_ACTION> {
                Ok(NET_FW_ACTION(self.get().action))
            }
            fn SetAction(&self, action: NET_FW_ACTION) -> windows::core::Result<()> {
                self.set(|r| r.action = action.0)
            }
        }
    };
}

rule_dispatch!(Rule_Impl);
rule_dispatch!(OldRule_Impl);

impl IDispatch_Impl for Rules_Impl {
    fn GetTypeInfoCount(&self) -> windows::core::Result<u32> {
        Err(E_NOTIMPL.into())
    }
    fn GetTypeInfo(&self, _itinfo: u32, _lcid: u32) -> windows::core::Result<ITypeInfo> {
        Err(E_NOTIMPL.into())
    }
    fn GetIDsOfNames(
        &self,
        _riid: *const windows::core::GUID,
        _rgsznames: *const windows::core::PCWSTR,
        _cnames: u32,
        _lcid: u32,
        _rgdispid: *mut i32,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn Invoke(
        &self,
        _dispidmember: i32,
        _riid: *const windows::core::GUID,
        _lcid: u32,
        _wflags: DISPATCH_FLAGS,
        _pdispparams: *const DISPPARAMS,
        _pvarresult: *mut windows::Win32::System::Variant::VARIANT,
        _pexcepinfo: *mut EXCEPINFO,
        _puargerr: *mut u32,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
}

impl IDispatch_Impl for Policy_Impl {
    fn GetTypeInfoCount(&self) -> windows::core::Result<u32> {
        Err(E_NOTIMPL.into())
    }
    fn GetTypeInfo(&self, _itinfo: u32, _lcid: u32) -> windows::core::Result<ITypeInfo> {
        Err(E_NOTIMPL.into())
    }
    fn GetIDsOfNames(
        &self,
        _riid: *const windows::core::GUID,
        _rgsznames: *const windows::core::PCWSTR,
        _cnames: u32,
        _lcid: u32,
        _rgdispid: *mut i32,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn Invoke(
        &self,
        _dispidmember: i32,
        _riid: *const windows::core::GUID,
        _lcid: u32,
        _wflags: DISPATCH_FLAGS,
        _pdispparams: *const DISPPARAMS,
        _pvarresult: *mut windows::Win32::System::Variant::VARIANT,
        _pexcepinfo: *mut EXCEPINFO,
        _puargerr: *mut u32,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
}

rule_methods!(Rule_Impl);
rule_methods!(OldRule_Impl);

impl INetFwRules_Impl for Rules_Impl {
    fn Count(&self) -> windows::core::Result<i32> {
        Ok(i32::try_from(load().len()).unwrap_or(i32::MAX))
    }
    fn Add(&self, rule: windows::core::Ref<INetFwRule>) -> windows::core::Result<()> {
        add(rule.ok()?)
    }
    fn Remove(&self, name: &windows::core::BSTR) -> windows::core::Result<()> {
        remove(&name.to_string())
    }
    fn Item(&self, name: &windows::core::BSTR) -> windows::core::Result<INetFwRule> {
        item(&name.to_string())
    }
    fn _NewEnum(&self) -> windows::core::Result<windows::core::IUnknown> {
        Ok(new_enum())
    }
}

impl INetFwPolicy2_Impl for Policy_Impl {
    fn CurrentProfileTypes(&self) -> windows::core::Result<i32> {
        Err(E_NOTIMPL.into())
    }
    fn get_FirewallEnabled(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
    ) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
        Err(E_NOTIMPL.into())
    }
    fn put_FirewallEnabled(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
        _enabled: windows::Win32::Foundation::VARIANT_BOOL,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn get_ExcludedInterfaces(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
    ) -> windows::core::Result<windows::Win32::System::Variant::VARIANT> {
        Err(E_NOTIMPL.into())
    }
    fn put_ExcludedInterfaces(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
        _interfaces: &windows::Win32::System::Variant::VARIANT,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn get_BlockAllInboundTraffic(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
    ) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
        Err(E_NOTIMPL.into())
    }
    fn put_BlockAllInboundTraffic(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
        _block: windows::Win32::Foundation::VARIANT_BOOL,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn get_NotificationsDisabled(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
    ) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
        Err(E_NOTIMPL.into())
    }
    fn put_NotificationsDisabled(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
        _disabled: windows::Win32::Foundation::VARIANT_BOOL,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn get_UnicastResponsesToMulticastBroadcastDisabled(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
    ) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
        Err(E_NOTIMPL.into())
    }
    fn put_UnicastResponsesToMulticastBroadcastDisabled(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
        _disabled: windows::Win32::Foundation::VARIANT_BOOL,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn Rules(&self) -> windows::core::Result<INetFwRules> {
        Ok(Rules.into())
    }
    fn ServiceRestriction(&self) -> windows::core::Result<INetFwServiceRestriction> {
        Err(E_NOTIMPL.into())
    }
    fn EnableRuleGroup(
        &self,
        _profiletypesbitmask: i32,
        _group: &windows::core::BSTR,
        _enable: windows::Win32::Foundation::VARIANT_BOOL,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn IsRuleGroupEnabled(
        &self,
        _profiletypesbitmask: i32,
        _group: &windows::core::BSTR,
    ) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
        Err(E_NOTIMPL.into())
    }
    fn RestoreLocalFirewallDefaults(&self) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn get_DefaultInboundAction(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
    ) -> windows::core::Result<NET_FW_ACTION> {
        Err(E_NOTIMPL.into())
    }
    fn put_DefaultInboundAction(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
        _action: NET_FW_ACTION,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn get_DefaultOutboundAction(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
    ) -> windows::core::Result<NET_FW_ACTION> {
        Err(E_NOTIMPL.into())
    }
    fn put_DefaultOutboundAction(
        &self,
        _profiletype: NET_FW_PROFILE_TYPE2,
        _action: NET_FW_ACTION,
    ) -> windows::core::Result<()> {
        Err(E_NOTIMPL.into())
    }
    fn get_IsRuleGroupCurrentlyEnabled(
        &self,
        _group: &windows::core::BSTR,
    ) -> windows::core::Result<windows::Win32::Foundation::VARIANT_BOOL> {
        Err(E_NOTIMPL.into())
    }
    fn LocalPolicyModifyState(&self) -> windows::core::Result<NET_FW_MODIFY_STATE> {
        Ok(local_policy_modify_state())
    }
}
